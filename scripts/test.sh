#!/usr/bin/env bash
# Sets up and builds like the quick start, then runs every test. GPU tests (label gpu) skip
# themselves when no device is visible.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" "$root/build"
cd "$root/build"
ctest --output-on-failure -j "${MOEBENCH_TEST_JOBS:-$(nproc)}" --timeout 900 "$@"
