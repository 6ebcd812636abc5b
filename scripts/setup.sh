#!/usr/bin/env bash
# Installs what is missing (Debian packages; pinned wheels unpacked into .deps/), configures and
# builds moebench.
# Usage: scripts/setup.sh [build-dir]   (default: build). Idempotent: a second run only rebuilds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}

need_apt=()
for pkg in cmake ninja-build g++ libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
# pip only downloads the pinned wheels (scripts/wheels.txt); nothing is pip-installed.
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3 python3-pip)
if ((${#need_apt[@]})); then
  echo "setup: installing ${need_apt[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

deps=${MOEBENCH_DEPS_DIR:-$root/.deps}
mkdir -p "$deps/wheels"

# unpack_wheel NAME==VERSION: download the pinned wheel (no dependencies) and unzip it into
# $deps/NAME, once; a second run reuses it.
unpack_wheel() {
  local spec=$1 name=${1%%==*} dest="$deps/${1%%==*}"
  [ -f "$dest/.unpacked-$spec" ] && return 0
  echo "setup: fetching $spec"
  rm -rf "$dest" && mkdir -p "$dest"
  python3 -m pip download -q --no-deps --only-binary=:all: "$spec" -d "$deps/wheels" ||
    { echo "setup: error: could not download $spec from PyPI" >&2; exit 1; }
  local whl
  whl=$(ls "$deps/wheels/${name//-/_}-${spec##*==}-"*.whl | head -n 1)
  python3 -m zipfile -e "$whl" "$dest"
  find "$dest" -path '*/bin/*' -type f -exec chmod +x {} +
  touch "$dest/.unpacked-$spec"
}
while read -r spec _; do
  case "$spec" in ''|'#'*) continue ;; esac
  unpack_wheel "$spec"
done < "$root/scripts/wheels.txt"

# The plots and the numpy cross-checks use numpy/matplotlib; the C++ build does not. They go
# into $deps/python (the scripts put it on sys.path; the tests get it through PYTHONPATH).
if ! PYTHONPATH="$deps/python" python3 -c "import numpy, matplotlib" 2>/dev/null; then
  echo "setup: fetching numpy and matplotlib (and what they need) into $deps/python"
  rm -rf "$deps/wheels/python"
  if python3 -m pip download -q --disable-pip-version-check --only-binary=:all: numpy matplotlib -d "$deps/wheels/python"; then
    for whl in "$deps/wheels/python"/*.whl; do python3 -m zipfile -e "$whl" "$deps/python"; done
  else
    echo "setup: note: could not fetch numpy/matplotlib; plots and numpy-based tests will be skipped"
  fi
fi

# The Python package (python/) and its tests: apache-tvm-ffi (the FFI module builds against its
# headers and library), jax, jax-tvm-ffi, pytest, pinned in scripts/python-wheels.txt and unpacked
# beside numpy. Without them the C++ build goes on and the Python tests skip, saying why.
python_wheels=()
while read -r spec _; do
  case "$spec" in ''|'#'*) continue ;; esac
  python_wheels+=("$spec")
done < "$root/scripts/python-wheels.txt"
python_stamp="$deps/python/.unpacked-$(printf '%s\n' "${python_wheels[@]}" | cksum | cut -d' ' -f1)"
if [ ! -f "$python_stamp" ]; then
  echo "setup: fetching the Python package's dependencies (scripts/python-wheels.txt) into $deps/python"
  rm -rf "$deps/wheels/python-ffi"
  if python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: "${python_wheels[@]}" \
      -d "$deps/wheels/python-ffi"; then
    for whl in "$deps/wheels/python-ffi"/*.whl; do python3 -m zipfile -e "$whl" "$deps/python"; done
    touch "$python_stamp"
  else
    echo "setup: note: could not fetch the Python package's dependencies; the moebench Python module is not built and its tests skip"
  fi
fi

# PyTorch and Triton for the Python tests (scripts/torch-wheels.txt), beside the rest. A machine
# without PyPI (the GPU machine) keeps whatever torch its Python has; MOEBENCH_NO_TORCH=1 skips.
torch_wheels=()
while read -r spec _; do
  case "$spec" in ''|'#'*) continue ;; esac
  torch_wheels+=("$spec")
done < "$root/scripts/torch-wheels.txt"
torch_stamp="$deps/python/.unpacked-torch-$(printf '%s\n' "${torch_wheels[@]}" | cksum | cut -d' ' -f1)"
if [ -z "${MOEBENCH_NO_TORCH:-}" ] && [ ! -f "$torch_stamp" ]; then
  echo "setup: fetching PyTorch and Triton for the Python tests (scripts/torch-wheels.txt, ~1.4 GB) into $deps/python"
  rm -rf "$deps/wheels/python-torch"
  if python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: "${torch_wheels[@]}" \
      -d "$deps/wheels/python-torch"; then
    rm -rf "$deps/python/torch" "$deps/python/triton" "$deps/python/nvidia"
    for whl in "$deps/wheels/python-torch"/*.whl; do python3 -m zipfile -e "$whl" "$deps/python"; done
    find "$deps/python/torch/bin" "$deps/python/triton" -path "*/bin/*" -type f -exec chmod +x {} + 2>/dev/null || true
    rm -rf "$deps/wheels/python-torch"  # 1.4 GB that pip's own cache keeps anyway
    touch "$torch_stamp"
  else
    echo "setup: note: could not fetch PyTorch/Triton; their Python tests skip"
  fi
fi

# The engines' Triton fused_moe kernels for the peers' tests (scripts/engine-wheels.txt): of each
# wheel only the kernel's source file, the engine's config-file loader and the package metadata are unpacked, into $deps/engines
# (its own folder: a test takes it off the path to see the engine missing; moebench reads the
# kernel without importing the engine, docs/migrating.md). Without them the tests use moebench's
# stand-in with the same calling convention, and say so.
engine_wheels=()
while read -r spec _; do
  case "$spec" in ''|'#'*) continue ;; esac
  engine_wheels+=("$spec")
done < "$root/scripts/engine-wheels.txt"
# The files kept of each wheel: the kernel, the engine's own config-file loader, the metadata.
engine_keep="/fused_moe/fused_moe.py /fused_moe_triton_kernels.py /fused_moe_triton_config.py .dist-info/METADATA"
engine_stamp="$deps/engines/.unpacked-$(printf '%s\n' "${engine_wheels[@]}" "$engine_keep" | cksum | cut -d' ' -f1)"
if [ -z "${MOEBENCH_NO_TORCH:-}" ] && [ ! -f "$engine_stamp" ]; then
  echo "setup: fetching the engines' Triton kernels (scripts/engine-wheels.txt) into $deps/engines"
  rm -rf "$deps/wheels/engines" "$deps/engines" && mkdir -p "$deps/engines"
  if python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: "${engine_wheels[@]}" \
      -d "$deps/wheels/engines"; then
    python3 - "$deps/wheels/engines" "$deps/engines" $engine_keep <<'PY'
import sys, zipfile, pathlib
src, dest = pathlib.Path(sys.argv[1]), sys.argv[2]
keep = tuple(sys.argv[3:])
for whl in sorted(src.glob("*.whl")):
    with zipfile.ZipFile(whl) as z:
        z.extractall(dest, [n for n in z.namelist() if n.endswith(keep)])
PY
    rm -rf "$deps/wheels/engines"
    touch "$engine_stamp"
  else
    echo "setup: note: could not fetch the engines' wheels; the peers' tests use moebench's stand-in kernel"
  fi
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

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOEBENCH_DEPS_DIR="$deps" ${MOEBENCH_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "${MOEBENCH_JOBS:-$(nproc)}"
