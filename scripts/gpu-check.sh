#!/usr/bin/env bash
# The checks of docs/gpu-session.md, steps 1-6, in one command on a GPU machine: most telling
# first, every step bounded in time, everything written under OUT (a log with the seconds since
# the start, ctest's output, the sweeps' results and tables), so that a run cut short still
# leaves what it did. Needs a build (scripts/setup.sh); changes no clock, power limit or mode.
#   usage: scripts/gpu-check.sh OUT
#   MOEBENCH_BIN: the moebench binary (default build/bin/moebench; ctest runs in its build folder);
#   MOEBENCH_GPU_CHECK_JOBS: GPU tests run at once (default 6; the timer tests run alone);
#   MOEBENCH_GPU_CHECK_TEST_S: the limit of each GPU test in seconds (default 900).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${MOEBENCH_BIN:-$root/build/bin/moebench}
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
[ -x "$bin" ] || { echo "gpu-check: no moebench binary at $bin: run scripts/setup.sh first" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd)
build=$(cd "$(dirname "$bin")/.." && pwd)
start=$SECONDS
step() { printf '\n=== [%ss] %s\n' "$((SECONDS - start))" "$*"; }
jobs=${MOEBENCH_GPU_CHECK_JOBS:-6}
test_s=${MOEBENCH_GPU_CHECK_TEST_S:-900}

checks() {
  failed=0
  step "1. the driver and the device"
  timeout 60 "$bin" devices | tee "$out/devices.txt" || failed=1
  grep -q '^  cuda:0 ' "$out/devices.txt" || { echo "gpu-check: no GPU visible (above): nothing to check" >&2; return 2; }

  step "2. the GPU tests (correctness, $jobs at a time; then the timers, alone)"
  MOEBENCH_REQUIRE_GPU=1 ctest --test-dir "$build" -L gpu -E 'Tuner|FirstContact' --timeout "$test_s" -j "$jobs" \
    --output-on-failure > "$out/ctest-correctness.txt" 2>&1 || failed=1
  MOEBENCH_REQUIRE_GPU=1 ctest --test-dir "$build" -L gpu -R 'Tuner|FirstContact' --timeout "$test_s" -j 1 \
    --output-on-failure > "$out/ctest-timers.txt" 2>&1 || failed=1
  grep -hE 'tests passed|\*\*\*' "$out/ctest-correctness.txt" "$out/ctest-timers.txt"

  step "3. a small sweep, read closely"
  timeout 300 "$bin" sweep gmm --model qwen3-30b-a3b --tokens 1,64 --backend cuda --out "$out/sweep" --tables "$out/sweep/configs" \
    --progress plain > "$out/sweep.txt" 2>&1 || failed=1
  cat "$out/sweep/summary.md" 2>/dev/null

  step "4. tables and lookup"
  timeout 60 "$bin" lookup gmm --model qwen3-30b-a3b --tokens 64 --tables "$out/sweep/configs" || failed=1

  step "5. CUPTI against CUDA events at one decode point"
  for timer in cupti events; do
    flag=()
    [ "$timer" = events ] && flag=(--no-cupti)
    timeout 120 "$bin" sweep gmm --model qwen3-30b-a3b --tokens 1 --backend cuda --budget 1 --strategy exhaustive --tables none \
      --progress quiet --out "$out/timer-$timer" "${flag[@]}" > /dev/null 2>&1 || failed=1
  done
  timeout 60 "$bin" compare "$out/timer-cupti/results.json" "$out/timer-events/results.json"

  step "5b. the layer at one token with and without programmatic dependent launch"
  for pdl in 1 0; do
    timeout 300 "$bin" run moe-layer --model qwen3-30b-a3b --tokens 1 --backend cuda --repeat 20 --config "pdl=$pdl" \
      2>&1 | grep -E '^(time|validate)' || failed=1
  done

  step "5c. the engines' Triton kernels on the device (vLLM's fused_moe_kernel, --backend vllm)"
  if [ -f "$root/python/moebench/_peers.so" ]; then
    # Two configs per point: the device path (the bench's tensors and stream, CUPTI) is what
    # this checks; the engine's whole space is the vs-vllm targets' (gpu-targets.sh OUT vs-vllm).
    echo '[{"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 3},
          {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 3}]' \
      > "$out/engine-space.json"
    for what in "gmm --stage up" "gmm --stage up --dtype fp8" "moe-layer --dtype fp8"; do
      name=engine-$(echo "$what" | tr ' ' '_' | tr -d -)
      # shellcheck disable=SC2086
      PYTHONPATH="$root/python:$root/.deps/engines:${PYTHONPATH:-}" timeout 300 "$bin" sweep $what --model qwen3-30b-a3b \
        --tokens 1,64 --backend vllm --space "$out/engine-space.json" --strategy exhaustive --out "$out/$name" \
        --engine-config "$out/$name/engine-configs" --progress plain > "$out/$name.txt" 2>&1 || failed=1
      tail -n 12 "$out/$name/summary.md" 2>/dev/null || tail -n 3 "$out/$name.txt"
    done
  else
    echo "skipped: python/moebench/_peers.so is not built (setup.sh builds it where apache-tvm-ffi is in the deps folder)"
  fi

  step "6. memory limits"
  timeout 900 "$bin" run moe-layer --model kimi-k2 --tokens 32768 --backend cuda 2>&1 | grep -vE '^moebench: (note|warning)'
  timeout 900 "$bin" run moe-layer --model kimi-k2 --tokens 131072 --backend cuda 2>&1 | grep -vE '^moebench: (note|warning)'

  step "done (exit $failed): $out"
  return $failed
}

# Through tee in a pipe, not a process substitution: the log is complete when the script ends.
checks 2>&1 | tee -a "$out/log.txt"
exit "${PIPESTATUS[0]}"
