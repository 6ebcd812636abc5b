#!/usr/bin/env bash
# Quick start: set up, build, and tune every family and the whole layer of one model, on the
# GPU when one is visible, else on the cpu backend. Results land in results/quickstart/, the
# tables in results/quickstart/configs/ (kept apart from the shipped configs/ so a trial run
# never changes what the library loads); the last lines print the lookup that reads them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" "$root/build"
bin="$root/build/bin/moebench"
out=${MOEBENCH_OUT:-$root/results/quickstart}
"$bin" devices
if "$bin" devices | grep -q '^  cuda:'; then
  tokens=1,16,256
  "$bin" sweep all --model qwen3-30b-a3b --tokens "$tokens" --out "$out" --tables "$out/configs"
else
  # The cpu backend is for trying every command anywhere, not for speed: the whole model's
  # shapes at decode and small batches take 5 to 10 minutes on two cores.
  tokens=1,16,64
  "$bin" sweep all --model qwen3-30b-a3b --tokens "$tokens" --backend cpu --out "$out" --tables "$out/configs"
fi
echo
echo "The tuned tables are in $out/configs. To see which config the library picks from them:"
echo "  $bin lookup gmm --model qwen3-30b-a3b --tokens ${tokens##*,} --tables $out/configs"
