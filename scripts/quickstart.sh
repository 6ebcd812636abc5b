#!/usr/bin/env bash
# Quick start: set up, build, and tune the router of one model over a few token counts,
# on the GPU when one is visible, else on the cpu backend. Results land in results/quickstart/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" "$root/build"
out=${MOEBENCH_OUT:-$root/results/quickstart}
"$root/build/bin/moebench" devices
"$root/build/bin/moebench" sweep all --model qwen3-30b-a3b --tokens 1,16,256 --out "$out" --tables "$out/configs"
