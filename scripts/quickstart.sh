#!/usr/bin/env bash
# Quick start: set up, build, and tune every family and the whole layer of one model, on the
# GPU when one is visible, else on the cpu backend. Results land in results/quickstart/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" "$root/build"
bin="$root/build/bin/moebench"
out=${MOEBENCH_OUT:-$root/results/quickstart}
"$bin" devices
if "$bin" devices | grep -q '^  cuda:'; then
  "$bin" sweep all --model qwen3-30b-a3b --tokens 1,16,256 --out "$out" --tables "$out/configs"
else
  # The cpu backend is for trying every command anywhere, not for speed: the whole model's
  # shapes at decode and small batches take about 2.5 minutes on two cores.
  "$bin" sweep all --model qwen3-30b-a3b --tokens 1,16,64 --backend cpu --out "$out" --tables "$out/configs"
fi
