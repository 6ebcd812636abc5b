"""Runs the Python package's tests with pytest, for ctest. Where a dependency is missing (the
pinned wheels could not be fetched, or the FFI module was not built) it says so and exits 77,
which ctest reports as skipped. `--gpu` runs tests/python/gpu/ (torch on CUDA) instead."""

import importlib.util
import os
import sys
from pathlib import Path

SKIPPED = 77
here = Path(__file__).resolve().parent


def skip(why):
    print(f"python tests skipped: {why}")
    sys.exit(SKIPPED)


gpu = "--gpu" in sys.argv[1:]
missing = [m for m in ("numpy", "pytest", "tvm_ffi") if importlib.util.find_spec(m) is None]
if missing:
    skip(f"{', '.join(missing)} not importable (scripts/setup.sh fetches them into the deps folder's python/)")
module = Path(os.environ.get("MOEBENCH_FFI_LIBRARY") or here.parents[1] / "python" / "moebench" / "_ffi.so")
if not module.is_file():
    skip(f"the FFI module {module} is not built (MOEBENCH_PYTHON needs apache-tvm-ffi: run scripts/setup.sh)")
if gpu and importlib.util.find_spec("torch") is None:
    skip("torch is not importable: the GPU round trip runs where an engine's torch is installed")
# CI sets MOEBENCH_REQUIRE_TORCH=1: there the torch and Triton tests must run, not skip.
if not gpu and os.environ.get("MOEBENCH_REQUIRE_TORCH") == "1":
    absent = [m for m in ("torch", "triton") if importlib.util.find_spec(m) is None]
    if absent:
        print(f"python tests: {', '.join(absent)} not importable, and MOEBENCH_REQUIRE_TORCH=1 requires them "
              "(scripts/setup.sh fetches them, scripts/torch-wheels.txt)", file=sys.stderr)
        sys.exit(1)

import pytest  # noqa: E402

target = here / "gpu" if gpu else here
args = [str(target), "-q", "-p", "no:cacheprovider", "--rootdir", str(here)]
if not gpu:
    args += ["--ignore", str(here / "gpu")]
code = pytest.main(args)
# Nothing collected (the GPU tests skip as a module where no device is visible): skipped, not failed.
sys.exit(SKIPPED if code == pytest.ExitCode.NO_TESTS_COLLECTED else code)
