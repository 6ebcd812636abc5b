#!/usr/bin/env bash
# Mutation trial: are the tests able to tell a broken build from a good one? Applies each
# mutation of a list (default scripts/mutants.txt) to a scratch copy of the tree, one at a
# time, rebuilds the copy incrementally, runs the tests most likely to catch it, restores the
# file, and reports each mutation caught or missed, then the score. Not part of the test run.
#
# Usage: scripts/mutants.sh [--list FILE] [--only NAME]... [--build DIR] [--dir DIR] [--check]
#   --list FILE  the mutations (format: the comment at the top of scripts/mutants.txt)
#   --only NAME  run only this mutation (repeatable)
#   --build DIR  the tree's build to start from (default build; scripts/setup.sh makes it)
#   --dir DIR    where the scratch copy goes (default $TMPDIR/moebench-mutants, or /tmp/...).
#                The tree and its build are copied there, and every build and test runs in a
#                private mount namespace where the copy is mounted over the tree's own path:
#                the build sees the same paths, so each mutation rebuilds only what it
#                touches. Needs unshare(1) and the right to use it (root, or user namespaces).
#   --check      only check that every mutation still applies to the tree (no build)
# Exit status: 0 every mutation caught, 1 one or more missed (or failed to build), 2 a usage
# or list error, or the selected tests failing before any mutation.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
list="$root/scripts/mutants.txt"
scratch=""
tree_build="$root/build"
only=()
check_only=0
die() { echo "mutants: error: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --list) [ $# -ge 2 ] || die "--list needs a file"; list=$2; shift 2 ;;
    --only) [ $# -ge 2 ] || die "--only needs a mutation name"; only+=("$2"); shift 2 ;;
    --dir) [ $# -ge 2 ] || die "--dir needs a folder"; scratch=$2; shift 2 ;;
    --build) [ $# -ge 2 ] || die "--build needs the tree's build folder"; tree_build=$(cd "$2" && pwd); shift 2 ;;
    --check) check_only=1; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see scripts/mutants.sh --help)" ;;
  esac
done
[ -f "$list" ] || die "no mutation list at $list"
command -v python3 >/dev/null || die "python3 is needed to read the mutation list"
list=$(cd "$(dirname "$list")" && pwd)/$(basename "$list")
tree=${scratch:-${TMPDIR:-/tmp}/moebench-mutants}
build=$tree_build  # the copy's, inside the namespace
logs="$tree/mutants-logs"

# The list, checked, as one line per mutation: name, file, tests (unit-separated). Each
# `from` must occur exactly once in its file, so a mutation never silently stops applying.
helper=$(cat <<'PY'
import sys
def parse(path):
    muts, cur = [], {}
    keys = ("name", "file", "from", "to", "tests")
    def close(n):
        if not cur: return
        missing = [k for k in keys if k not in cur]
        if missing: sys.exit(f"mutants: error: {path}:{n}: mutation {cur.get('name', '?')} lacks {', '.join(missing)}")
        muts.append(dict(cur)); cur.clear()
    n = 0
    for n, line in enumerate(open(path), 1):
        s = line.rstrip("\n")
        if s.startswith("#"): continue
        if not s.strip(): close(n); continue
        k, eq, v = s.partition("=")
        k = k.strip()
        if not eq or k not in keys: sys.exit(f"mutants: error: {path}:{n}: expected one of {', '.join(keys)} = value, got: {s}")
        if k in cur: sys.exit(f"mutants: error: {path}:{n}: {k} given twice in one mutation (a blank line separates mutations)")
        cur[k] = v.strip()
    close(n + 1)
    names = [m["name"] for m in muts]
    dup = {x for x in names if names.count(x) > 1}
    if dup: sys.exit(f"mutants: error: {path}: mutation names used twice: {', '.join(sorted(dup))}")
    return muts
cmd, path, tree = sys.argv[1:4]
muts = parse(path)
if cmd == "check":
    for m in muts:
        try: text = open(f"{tree}/{m['file']}").read()
        except OSError as e: sys.exit(f"mutants: error: {path}: mutation {m['name']}: cannot read {m['file']}: {e.strerror}")
        c = text.count(m["from"])
        if c != 1: sys.exit(f"mutants: error: {path}: mutation {m['name']}: its from text occurs {c} times in {m['file']}, not once: update the list")
        print("\x1f".join((m["name"], m["file"], m["tests"])))
elif cmd == "apply":
    m = next(m for m in muts if m["name"] == sys.argv[4])
    p = f"{tree}/{m['file']}"
    text = open(p).read()
    open(p, "w").write(text.replace(m["from"], m["to"], 1))
PY
)

# The copy: the tree's files (tracked, and untracked but not ignored) and its build, with
# their time stamps, so that ninja sees the copy as built.
make_copy() {
  [ -f "$tree_build/build.ninja" ] || die "no build at $tree_build: run scripts/setup.sh first"
  case "$tree_build" in "$root"/*) ;; *) die "--build must be a folder inside $root" ;; esac
  [ ! -e "$tree" ] || [ -e "$tree/.moebench-mutants" ] || die "$tree exists and is not a scratch copy: choose another --dir"
  rm -rf "$tree"
  mkdir -p "$tree"
  touch "$tree/.moebench-mutants"
  git -C "$root" ls-files -z -co --exclude-standard | tar -C "$root" --null -T - -cf - | tar -C "$tree" -xf -
  tar -C "$root" -cf - "${tree_build#"$root"/}" | tar -C "$tree" -xf -
  # The pinned dependencies (.deps: cuobjdump, tvm_ffi, numpy) are ignored, so not copied: a
  # link stays a link, a folder is bound into the copy by in_copy. Without them the tests that
  # need them fail before any mutation, or count as catches.
  if [ -L "$root/.deps" ]; then cp -P "$root/.deps" "$tree/.deps"
  elif [ -d "$root/.deps" ]; then mkdir -p "$tree/.deps"; fi
  mkdir -p "$logs"
}

# Runs a command with the copy mounted over the tree, in a mount namespace of its own, the
# tree's .deps folder bound into the copy first (--rbind carries that mount along).
in_copy() {
  local ns=(unshare -m)
  [ "$(id -u)" = 0 ] || ns=(unshare -rm)
  "${ns[@]}" sh -c 'if [ -d "$2/.deps" ] && [ ! -L "$2/.deps" ]; then mount --bind "$2/.deps" "$1/.deps" || exit 1; fi
    mount --rbind "$1" "$2" && cd "$2" && shift 2 && exec "$@"' sh "$tree" "$root" "$@"
}

# ccache in direct mode was seen to return an nvcc object of another tree's version of a
# .cu file; the preprocessor mode hashes what is compiled, so it cannot.
build_copy() {
  CCACHE_NODIRECT=1 in_copy cmake --build "$build" -j "${MOEBENCH_JOBS:-$(nproc)}" --target moebench moebench_tests >"$1" 2>&1
}

# Runs a gtest filter on the copy; true when every selected test passed and at least one ran.
run_tests() {
  PYTHONPATH="${MOEBENCH_DEPS_DIR:-$root/.deps}/python" \
    in_copy timeout 1800 "$build/moebench_tests" --gtest_filter="$1" >"$2" 2>&1
}
ran_none() { grep -q '^\[==========\] 0 tests' "$1"; }

if [ $check_only = 1 ]; then
  mutations=$(python3 -c "$helper" check "$list" "$root") || exit 2
  echo "mutants: $(grep -c . <<< "$mutations") mutations, each applies to the tree exactly once"
  exit 0
fi

command -v unshare >/dev/null || die "unshare (util-linux) is needed to mount the copy over the tree"
echo "mutants: copying the tree and its build to $tree"
make_copy
in_copy true 2>"$logs/unshare.log" ||
  die "cannot mount the copy over the tree in a private mount namespace ($(head -c 200 "$logs/unshare.log")): run as root or enable user namespaces"
if [ -e "$root/.deps" ]; then
  in_copy sh -c '[ -n "$(ls -A .deps)" ]' || die "the copy does not see $root/.deps: the tests that need it would fail unmutated"
fi
mutations=$(python3 -c "$helper" check "$list" "$tree") || exit 2
[ -n "$mutations" ] || die "$list lists no mutation"

selected=()
while IFS= read -r line; do
  name=${line%%$'\x1f'*}
  if [ ${#only[@]} -gt 0 ]; then
    keep=0
    for o in "${only[@]}"; do [ "$o" = "$name" ] && keep=1; done
    [ $keep = 1 ] || continue
  fi
  selected+=("$line")
done <<< "$mutations"
for o in "${only[@]}"; do
  grep -q "^$o"$'\x1f' <<< "$mutations" || die "--only $o: no such mutation in $list"
done

# Before any mutation: the copy builds and the selected tests pass, or a catch means nothing.
echo "mutants: building the copy (log: $logs/clean.build.log)"
build_copy "$logs/clean.build.log" || die "the unmutated copy does not build: see $logs/clean.build.log"
all_tests=""
for line in "${selected[@]}"; do all_tests+="${all_tests:+:}${line##*$'\x1f'}"; done
echo "mutants: running the selected tests unmutated"
run_tests "$all_tests" "$logs/clean.test.log" ||
  die "the selected tests fail without any mutation: see $logs/clean.test.log"

current=""
# A fresh time stamp, so the next build compiles the original again.
restore() { [ -z "$current" ] || cp "$root/$current" "$tree/$current"; current=""; }
trap 'restore' EXIT
trap 'restore; exit 130' INT TERM

caught=0 total=0 missed_names=()
for line in "${selected[@]}"; do
  IFS=$'\x1f' read -r name file tests <<< "$line"
  total=$((total + 1))
  current=$file
  python3 -c "$helper" apply "$list" "$tree" "$name"
  if ! build_copy "$logs/$name.build.log"; then
    verdict="MISSED (did not build: $logs/$name.build.log)"
    missed_names+=("$name")
  elif run_tests "$tests" "$logs/$name.test.log"; then
    if ran_none "$logs/$name.test.log"; then verdict="MISSED (no test matches $tests)"
    else verdict="MISSED (tests $tests passed)"; fi
    missed_names+=("$name")
  else
    failed=$(grep -o '^\[  FAILED  \] [A-Za-z][A-Za-z0-9_./]*' "$logs/$name.test.log" | sort -u | wc -l)
    verdict="caught by $failed failing tests of $tests"
    caught=$((caught + 1))
  fi
  restore
  printf '%-48s %s\n' "$name" "$verdict"
done
echo "mutants: score: $caught/$total caught"
[ ${#missed_names[@]} -eq 0 ] || { echo "mutants: missed: ${missed_names[*]}"; exit 1; }
