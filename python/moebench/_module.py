"""Finds and loads the FFI module (_ffi.so), once, on first use."""

import functools
import os
from pathlib import Path


def _path() -> Path:
    given = os.environ.get("MOEBENCH_FFI_LIBRARY")
    if given:
        return Path(given)
    return Path(__file__).resolve().parent / "_ffi.so"


@functools.lru_cache(maxsize=None)
def lib():
    """The loaded module; ImportError saying how to build it when it is not there."""
    import tvm_ffi

    path = _path()
    if not path.is_file():
        raise ImportError(
            f"moebench: the FFI module {path} is not built: run scripts/setup.sh (or `pip install .` "
            "of the repository), or point MOEBENCH_FFI_LIBRARY at a built _ffi.so"
        )
    return tvm_ffi.load_module(str(path))
