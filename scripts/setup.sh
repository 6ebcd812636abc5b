#!/usr/bin/env bash
# Installs what is missing (Debian packages, Python packages), configures and builds moebench.
# Usage: scripts/setup.sh [build-dir]   (default: build). Idempotent: a second run only rebuilds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}

need_apt=()
for pkg in cmake ninja-build g++ libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if ((${#need_apt[@]})); then
  echo "setup: installing ${need_apt[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The plots and the peer-comparison scripts use numpy/matplotlib; the C++ build does not.
if command -v python3 >/dev/null; then
  python3 -c "import numpy, matplotlib" 2>/dev/null ||
    python3 -m pip install -q numpy matplotlib 2>/dev/null ||
    echo "setup: note: could not install numpy/matplotlib with pip; plots and numpy-based tests will be skipped"
fi

if ! command -v nvcc >/dev/null; then
  for d in /usr/local/cuda/bin /usr/local/cuda-13.0/bin /usr/local/cuda-12/bin; do
    [ -x "$d/nvcc" ] && export PATH="$d:$PATH" && break
  done
fi
command -v nvcc >/dev/null || {
  echo "setup: error: nvcc not found: install the CUDA Toolkit (12.4 or newer; 13.0 is tested) and put its bin/ on PATH" >&2
  exit 1
}

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${MOEBENCH_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "${MOEBENCH_JOBS:-$(nproc)}"
