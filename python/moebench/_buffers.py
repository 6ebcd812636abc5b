"""What the module cannot see through DLPack: whether a buffer may be written. tvm-ffi takes
tensors over the unversioned protocol, which has no read-only flag, so an immutable buffer
handed over as an output would be written in place (and a read-only mapping faults). Outputs are
checked here first; read-only inputs go over the versioned protocol, which says so."""

import ctypes
import sys

_DLPACK_READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY
# DLManagedTensorVersioned: its version (two uint32), manager_ctx, deleter, then the uint64 flags.
_FLAGS_OFFSET = 8 + 2 * ctypes.sizeof(ctypes.c_void_p)
_VERSIONED = b"dltensor_versioned"
_KDL_CPU = 1

_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _module_of(a) -> str:
    return type(a).__module__.split(".")[0]


def _versioned_flags(a):
    """The DLPack flags `a` exports with (host memory only), or None where it cannot say."""
    try:
        if a.__dlpack_device__()[0] != _KDL_CPU:
            return None  # a device export may order streams: not done for a question
        capsule = a.__dlpack__(max_version=(1, 0))
    except (AttributeError, TypeError, BufferError, ValueError):
        return None
    if _capsule_name(capsule) != _VERSIONED:
        return None
    # Unconsumed, the capsule's destructor releases the export.
    return ctypes.c_uint64.from_address(_capsule_pointer(capsule, _VERSIONED) + _FLAGS_OFFSET).value


def read_only(a):
    """Why `a` must not be written ("" when it may be, as far as anything says)."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(a, np.ndarray):
        if a.flags.writeable:
            return ""
        return "a read-only numpy array, such as np.load(..., mmap_mode='r') or np.frombuffer of bytes gives"
    if isinstance(a, bytes):
        return "bytes are immutable"
    if isinstance(a, memoryview):
        return "a read-only memoryview" if a.readonly else ""
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(a, jax.Array):
        return "JAX arrays are immutable: moebench.jax returns its outputs instead"
    if _module_of(a) == "torch":
        return ""  # torch tensors are writable; probing one could order CUDA streams
    flags = _versioned_flags(a)
    if flags is not None and flags & _DLPACK_READ_ONLY:
        return "its DLPack export is flagged read-only"
    return ""


def check_outputs(entry: str, **outputs):
    """ValueError naming the first output (or workspace) that must not be written."""
    for name, a in outputs.items():
        if a is None:
            continue
        why = read_only(a)
        if why:
            raise ValueError(f"{entry}: output '{name}' is read-only ({why}): pass a writable buffer")


def input_view(a):
    """`a` as the module can take it: a read-only host array goes over versioned DLPack, which
    numpy will export (the unversioned protocol refuses it, having no flag to say so)."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(a, np.ndarray) and not a.flags.writeable:
        import tvm_ffi

        return tvm_ffi.from_dlpack(a.__dlpack__(max_version=(1, 0)))
    return a
