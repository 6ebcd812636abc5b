#!/usr/bin/env bash
# Performance regression check for CI: runs a small fixed sweep, compares it with a committed
# baseline (`moebench compare BASE NEW --fail-on slow`) and exits 1 when a record is SLOW or
# BROKEN, so the job fails. See docs/ci.md (a GitHub Actions job for a self-hosted GPU runner).
#
#   scripts/ci-perf-check.sh --backend cuda --out perf-out
#   scripts/ci-perf-check.sh --backend cpu --out perf-out --baseline results/baselines/cpu
#   scripts/ci-perf-check.sh --backend cuda --out perf-out --update-baseline   # record a baseline
#
# The fixed sweep is `moebench sweep all --space default --strategy exhaustive` over a few token
# counts of one model (every candidate fully measured, so both sides compare like for like), and,
# when config tables have entries for this device and problem, a second sweep of the configs that
# runtime dispatch would pick there (`moebench lookup`): the tuned configs. Results go to OUT/ and
# OUT/tuned/; a baseline directory holds the same two files (results.json, tuned/results.json).
#
# A SLOW record is measured again before the check fails: with --attempts N the sweep is re-run
# (up to N runs in all) while records are SLOW, and only a record that is SLOW (or BROKEN) in
# every run fails the check. Contention on a shared machine makes a run slower, never faster, so
# this filters noise without hiding a real regression, which is slow every time.
#
# Options [defaults]:
#   --backend cpu|cuda   backend to time [cuda when a GPU is visible, else cpu]
#   --baseline DIR       baseline directory [results/baselines/<device slug>: .../cpu,
#                        .../nvidia-h100-80gb-hbm3, ... as `moebench lookup` names devices]
#   --out DIR            where the new sweep goes [perf-check]; emptied first if it holds a sweep
#   --model NAME         model preset or preset .json [qwen3-30b-a3b]
#   --tokens LIST        token counts [cpu: 1,16,64; cuda: 1,16,128,1024]
#   --shape "FLAGS"      problem flags for every family that takes them [cpu: small shapes, so the
#                        check takes seconds; cuda: none, the model's own shapes]
#   --threshold P        a median moving by more than this is SLOW/FAST, unless the interquartile
#                        ranges overlap (NOISY) [cuda: 5%; cpu: 150%, see below]
#   --attempts N         runs before a SLOW record fails the check [cuda: 2; cpu: 3]
#   --tables DIR         config tables the tuned configs come from [$MOEBENCH_CONFIG_DIR or configs/]
#   --no-tuned           skip the tuned-config sweep
#   --results DIR        check a sweep already made (DIR/results.json, DIR/tuned/results.json when
#                        there) instead of running one: one attempt, no binary timing anything.
#                        CI can sweep in one step and judge in another; the tests check the
#                        comparison logic on fixtures this way, independent of the machine's speed
#   --moebench PATH      the binary [$MOEBENCH, else build/bin/moebench, else moebench on PATH]
#   --update-baseline    write the new results into the baseline directory instead of comparing
#   -- ARGS...           more `moebench sweep` flags (e.g. --min-time 5ms); give the same ones
#                        when the baseline is recorded
#
# The cpu backend: one thread (--threads 1) and a 150% threshold. On a shared CPU machine a
# record's median swings by up to 2.2x between runs (another job on the same core, a config that
# lands in a slow mode for a while), so the cpu check catches gross regressions only (a kernel
# 2.5x slower); it exists to run this workflow anywhere. To catch small changes use a GPU runner,
# or a dedicated quiet CPU machine with --threshold 10%.
#
# Exit status: 0 no record SLOW/BROKEN; 1 some record SLOW or BROKEN in every attempt; 2 the check
# could not run (bad flags, no baseline, sweep failed, no record of the baseline matched).
set -euo pipefail

prog=ci-perf-check.sh
root=$(cd "$(dirname "$0")/.." && pwd)

die() {
  echo "$prog: error: $*" >&2
  exit 2
}
note() { echo "$prog: $*" >&2; }

backend="" baseline="" out="perf-check" model="qwen3-30b-a3b" tokens="" threshold="" attempts=""
shape="" shape_set=0 tables="" tuned=1 bin="${MOEBENCH:-}" update=0 given=""
extra=()
while (($#)); do
  case "$1" in
    --backend) backend=${2:?--backend needs cpu or cuda}; shift 2 ;;
    --baseline) baseline=${2:?--baseline needs a directory}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --model) model=${2:?--model needs a preset name}; shift 2 ;;
    --tokens) tokens=${2:?--tokens needs a list}; shift 2 ;;
    --shape) [ $# -ge 2 ] || die "--shape needs flags (\"\" for none)"; shape=$2; shape_set=1; shift 2 ;;
    --threshold) threshold=${2:?--threshold needs a percentage}; shift 2 ;;
    --attempts) attempts=${2:?--attempts needs a count}; shift 2 ;;
    --tables) tables=${2:?--tables needs a directory}; shift 2 ;;
    --no-tuned) tuned=0; shift ;;
    --results) given=${2:?--results needs a sweep directory}; shift 2 ;;
    --moebench) bin=${2:?--moebench needs a path}; shift 2 ;;
    --update-baseline) update=1; shift ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

if [ -z "$bin" ]; then
  if [ -x "$root/build/bin/moebench" ]; then bin="$root/build/bin/moebench"
  elif command -v moebench >/dev/null; then bin=$(command -v moebench)
  else die "no moebench binary: build it (scripts/setup.sh) or give --moebench PATH"
  fi
fi
[ -x "$bin" ] || die "--moebench $bin is not an executable"

if [ -z "$backend" ]; then
  devices=$("$bin" devices 2>/dev/null || true)
  if grep -q '^  cuda:' <<<"$devices"; then backend=cuda; else backend=cpu; fi
fi
case "$backend" in
  cpu)
    [ -n "$tokens" ] || tokens="1,16,64"
    [ "$shape_set" = 1 ] || shape="--experts 8 --topk 2 --hidden 64 --intermediate 32"
    [ -n "$threshold" ] || threshold="150%"
    [ -n "$attempts" ] || attempts=3
    backend_args=(--backend cpu --threads 1)
    ;;
  cuda)
    [ -n "$tokens" ] || tokens="1,16,128,1024"
    [ -n "$threshold" ] || threshold="5%"
    [ -n "$attempts" ] || attempts=2
    backend_args=(--backend cuda --devices 0)
    ;;
  *) die "--backend '$backend': use cpu or cuda" ;;
esac
[[ "$attempts" =~ ^[1-9][0-9]*$ ]] || die "--attempts '$attempts': give a positive count"
if [ -n "$given" ]; then
  [ -f "$given/results.json" ] || die "--results $given: no results.json there (give a sweep's --out directory)"
  [ "$update" = 0 ] || die "--results and --update-baseline: record a baseline from a sweep, not from results"
  [ "$(realpath -m "$given")" != "$(realpath -m "$out")" ] || die "--results and --out are one directory: give another --out"
  attempts=1 # nothing is measured again
fi
read -r -a shape_args <<<"$shape"
[ -n "$tables" ] || tables="${MOEBENCH_CONFIG_DIR:-$root/configs}"
tables=${tables%%:*}  # lookup reads one directory; the first of a $MOEBENCH_CONFIG_DIR list
if [ -n "$baseline" ] && [ "$update" = 0 ] && [ ! -f "$baseline/results.json" ]; then
  die "no baseline at $baseline/results.json: record one with --update-baseline (same flags), review it, commit it"
fi

# One sweep into a fresh directory (a sweep refuses to overwrite its journal). Only a directory
# holding a sweep, or an empty one, is emptied.
fresh_dir() {
  local dir=$1
  if [ -e "$dir" ]; then
    [ -f "$dir/journal.jsonl" ] || [ -f "$dir/compare.md" ] || [ -z "$(ls -A "$dir" 2>/dev/null)" ] ||
      die "--out $dir exists and holds no sweep: give a new or empty directory"
    rm -rf "$dir"
  fi
  mkdir -p "$dir"
}

sweep() {
  local dir=$1
  shift
  fresh_dir "$dir"
  if ! "$bin" sweep all --model "$model" "${shape_args[@]}" --tokens "$tokens" "${backend_args[@]}" \
    --strategy exhaustive --seed 0 --tables none --quiet --out "$dir" "$@" "${extra[@]}" >"$dir/sweep.log" 2>&1; then
    cat "$dir/sweep.log" >&2
    die "the sweep failed (log above, also in $dir/sweep.log)"
  fi
}

# The first string value of a key in a results file: meta comes first (keys are sorted).
field() {
  awk -v k="\"$1\"" '{
    i = index($0, k)
    if (i && match(s = substr($0, i + length(k)), /^ *: *"[^"]*"/)) {
      s = substr(s, RSTART, RLENGTH); sub(/^ *: *"/, "", s); sub(/"$/, "", s); print s; exit
    }
  }' "$2"
}

# The tuned configs as a --space file {family: [configs]}: what runtime dispatch picks from the
# tables for each family at each token count. `moebench list` says which problem flags each
# family takes (lookup refuses the others). Prints the file's path, or nothing when no table has
# an entry for these problems.
tuned_space() {
  local file=$1 line fam="" section="" json="{" sep="" configs flag name i
  local -A takes=()
  while IFS= read -r line; do
    if [[ "$line" =~ ^([a-z][a-z0-9_-]*):\  ]]; then fam=${BASH_REMATCH[1]} section=""
    elif [[ "$line" =~ ^\ \ problem\ parameters ]]; then section=problem
    elif [[ "$line" =~ ^\ \ [a-z]+\ config\ parameters ]]; then section=config
    elif [[ "$line" =~ ^\ \ \ \ ([a-z_]+)\  ]] && [ "$section" = problem ] && [ -n "$fam" ]; then
      takes[$fam]+=" ${BASH_REMATCH[1]} "
    elif [[ "$line" =~ ^model\ presets ]]; then break
    fi
  done < <("$bin" list)
  for fam in $(printf '%s\n' "${!takes[@]}" | sort); do
    local args=() value=()
    for ((i = 0; i < ${#shape_args[@]}; i++)); do
      flag=${shape_args[i]}
      if [[ "$flag" == --*=* ]]; then
        name=${flag%%=*} value=()
      else
        name=$flag value=("${shape_args[i + 1]-}")
        i=$((i + 1))
      fi
      name=${name#--}
      [ "$name" != set ] || name=${value[0]%%=*}  # --set NAME=VALUE
      if [[ "${takes[$fam]}" == *" $name "* ]]; then args+=("$flag" "${value[@]}"); fi
    done
    configs=$("$bin" lookup "$fam" --model "$model" "${args[@]}" --tokens "$tokens" --backend "$backend" \
      --tables "$tables" --json 2>/dev/null | grep -E '"match":"(exact|nearest)"' |
      awk '{ i = index($0, "\"config\":{"); if (i) { s = substr($0, i + 9); print substr(s, 1, index(s, "}")) } }' |
      sort -u | paste -sd, -) || true
    if [ -n "$configs" ]; then
      json+="$sep\"$fam\":[$configs]"
      sep=","
    fi
  done
  if [ -n "$sep" ]; then
    echo "$json}" >"$file"
    echo "$file"
  fi
}

# All sweeps of one attempt into $out (and $out/tuned), or the given results copied there.
measure() {
  if [ -n "$given" ]; then
    fresh_dir "$out"
    cp "$given/results.json" "$out/results.json"
    if [ -f "$given/tuned/results.json" ]; then
      mkdir -p "$out/tuned"
      cp "$given/tuned/results.json" "$out/tuned/results.json"
    fi
    slug=$(field device_slug "$out/results.json")
    [ -n "$slug" ] || die "$given/results.json names no device_slug"
    return
  fi
  note "sweep: default space -> $out"
  sweep "$out" --space default
  [ -n "$slug" ] || slug=$(field device_slug "$out/results.json")
  [ -n "$slug" ] || die "$out/results.json names no device_slug"
  if [ "$tuned" = 1 ]; then
    local space
    space=$(tuned_space "$out.tuned-space.json")
    if [ -n "$space" ]; then
      note "sweep: tuned configs from $tables -> $out/tuned"
      sweep "$out/tuned" --space "$space"
      mv "$space" "$out/tuned/space.json"
    elif [ "$attempt" = 1 ]; then
      note "no table in $tables has an entry for these problems on $slug: no tuned configs to check"
    fi
  fi
}

# compare BASE NEW for one part; appends "part|kernel|problem|tokens|config" of each SLOW or
# BROKEN record to $bad. A part where nothing matched is an error: it would pass unchecked.
compare_part() {
  local part=$1 base=$2 new=$3 rc=0 matched
  "$bin" compare "$base" "$new" --threshold "$threshold" --fail-on slow >"$new/compare.md" 2>"$new/compare.err" || rc=$?
  [ "$rc" -le 1 ] || { cat "$new/compare.err" >&2; die "moebench compare failed ($part)"; }
  matched=$(sed -n 's/^\([0-9][0-9]*\) matched:.*/\1/p' "$new/compare.md" | tail -n 1)
  if [ -z "$matched" ] || [ "$matched" = 0 ]; then
    die "no record of $base matches one of $new ($part): was the baseline recorded with other flags (model, tokens, shape, --)?"
  fi
  if [ "$attempt" = 1 ]; then
    echo "## $part: $base vs $new"
    echo
    cat "$new/compare.md"
    echo
    if grep -q 'only in BASE' "$new/compare.md"; then
      note "warning ($part): baseline records are missing from the new sweep (did the config space change?)"
    fi
  fi
  awk -F' [|] ' -v part="$part" '/[|] (SLOW|BROKEN) [|]$/ { sub(/^[|] /, "", $1); print part "|" $1 "|" $2 "|" $3 "|" $4 }' \
    "$new/compare.md" >>"$bad"
}

slug=""
mkdir -p "$(dirname "$out")"
if [ "$update" = 1 ]; then
  attempt=1
  measure
  [ -n "$baseline" ] || baseline="$root/results/baselines/$slug"
  mkdir -p "$baseline"
  cp "$out/results.json" "$baseline/results.json"
  rm -rf "$baseline/tuned"
  if [ -f "$out/tuned/results.json" ]; then
    mkdir -p "$baseline/tuned"
    cp "$out/tuned/results.json" "$baseline/tuned/results.json"
  fi
  note "baseline written to $baseline: record it on a quiet machine, review it, commit it"
  exit 0
fi

still="" # records SLOW/BROKEN in every attempt so far
for ((attempt = 1; attempt <= attempts; attempt++)); do
  [ "$attempt" = 1 ] || note "attempt $attempt of $attempts: measuring again"
  measure
  [ -n "$baseline" ] || baseline="$root/results/baselines/$slug"
  [ -f "$baseline/results.json" ] ||
    die "no baseline for device '$slug' at $baseline/results.json: record one with --update-baseline (same flags), review it, commit it"
  if [ "$attempt" = 1 ]; then
    base_dev=$(field device "$baseline/results.json")
    new_dev=$(field device "$out/results.json")
    [ "$base_dev" = "$new_dev" ] ||
      note "warning: the baseline was measured on '$base_dev', this run on '$new_dev': timings of different machines differ"
  fi
  bad="$out/slow-records.txt"
  : >"$bad"
  compare_part "default space" "$baseline" "$out"
  if [ -f "$out/tuned/results.json" ]; then
    if [ -f "$baseline/tuned/results.json" ]; then
      compare_part "tuned configs" "$baseline/tuned" "$out/tuned"
    elif [ "$attempt" = 1 ]; then
      note "warning: the baseline has no tuned/results.json: the tuned configs are measured, not compared (record them with --update-baseline)"
    fi
  elif [ -f "$baseline/tuned/results.json" ] && [ "$attempt" = 1 ]; then
    note "warning: the baseline has tuned configs, but no table in $tables has an entry for these problems now"
  fi
  sort -u -o "$bad" "$bad"
  if [ "$attempt" = 1 ]; then still=$(cat "$bad")
  else still=$(printf '%s\n' "$still" | grep -Fxf "$bad" || true)
  fi
  n=$(printf '%s' "$still" | grep -c . || true)
  [ "$n" -gt 0 ] || break
  note "attempt $attempt: $n record(s) SLOW or BROKEN in every attempt so far"
done

if [ "$n" = 0 ]; then
  [ "$attempt" = 1 ] || note "the records SLOW in attempt 1 were not slow again: noise, not a regression"
  echo "ci-perf-check: PASS (threshold $threshold, baseline $baseline)"
  exit 0
fi
echo "ci-perf-check: FAIL: $n record(s) SLOW or BROKEN beyond $threshold in all $attempts attempt(s) (baseline $baseline):"
echo
echo "| part | kernel | problem | tokens | config |"
echo "|---|---|---|---:|---|"
printf '%s\n' "$still" | awk -F'|' '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }'
exit 1
