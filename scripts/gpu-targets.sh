#!/usr/bin/env bash
# The kernel issues' performance targets as benchmarks, on a GPU: one `moebench sweep` per
# target (scripts/targets.json) into OUT/<id>/<i>/, the torch/cuBLAS peers (scripts/peers.py),
# then the judgement (scripts/check_targets.py) as a markdown table and OUT/targets-report.json.
# Sweeps already done in OUT are kept, so a run cut short (a 10-minute device call, say) goes
# on where it stopped; name id prefixes to run only some targets.
#   usage: scripts/gpu-targets.sh OUT [ID_PREFIX ...]
#   MOEBENCH_BIN: the moebench binary; MOEBENCH_TARGETS: another targets file;
#   MOEBENCH_TARGETS_BACKEND: cuda (default) or cpu, to try the script where no GPU is.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${MOEBENCH_BIN:-$root/build/bin/moebench}
targets=${MOEBENCH_TARGETS:-$root/scripts/targets.json}
backend=${MOEBENCH_TARGETS_BACKEND:-cuda}
[ $# -ge 1 ] || { echo "usage: $0 OUT [ID_PREFIX ...]" >&2; exit 2; }
out=$1
shift
[ -x "$bin" ] || { echo "gpu-targets: no moebench binary at $bin (build first, or set MOEBENCH_BIN)" >&2; exit 2; }
mkdir -p "$out"
# One line per sweep: id, index, tokens, then the sweep's arguments (tab-separated).
python3 - "$targets" "$@" > "$out/sweeps.tsv" <<'PY'
import json, sys
targets = json.load(open(sys.argv[1]))["targets"]
prefixes = sys.argv[2:]
for t in targets:
    if prefixes and not any(t["id"].startswith(p) for p in prefixes):
        continue
    for i, args in enumerate(t["sweeps"]):
        tokens = t["tokens"] if isinstance(t["tokens"], list) else [t["tokens"]]
        print("\t".join([t["id"], str(i), ",".join(map(str, tokens))] + args))
PY
failed=0
while IFS=$'\t' read -r id i tokens args; do
  dir="$out/$id/$i"
  [ -f "$dir/results.json" ] && { echo "== $id/$i: done before"; continue; }
  resume=()
  [ -f "$dir/journal.jsonl" ] && resume=(--resume)
  IFS=$'\t' read -r -a argv <<< "$args"
  # A sweep that names its backend (an engine's: --backend vllm) keeps it; an engine's sweep
  # writes no moebench tables, so --tables none is ours alone.
  own=(--backend "$backend" --tables none)
  for a in "${argv[@]}"; do [ "$a" = --backend ] && own=(); done
  echo "== $id/$i: moebench sweep ${argv[*]} --tokens $tokens"
  "$bin" sweep "${argv[@]}" --tokens "$tokens" "${own[@]}" --out "$dir" --progress plain "${resume[@]}" \
    || { echo "gpu-targets: $id/$i failed" >&2; failed=1; }
done < "$out/sweeps.tsv"
python3 "$root/scripts/peers.py" "$out" --targets "$targets" || echo "gpu-targets: no peers measured (pct_peer targets stay unjudged)" >&2
python3 "$root/scripts/check_targets.py" "$out" --targets "$targets" | tee "$out/targets.md"
exit $failed
