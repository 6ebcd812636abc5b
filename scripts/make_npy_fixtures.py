#!/usr/bin/env python3
"""Writes the .npy fixtures of tests/kernels/io/npy_test.cpp with numpy (1.x or 2.x).

The values follow simple formulas that the C++ test recomputes, so the fixtures check that
moebench reads what numpy wrote, bit for bit. Run from anywhere:

    python3 scripts/make_npy_fixtures.py [OUTDIR]     (default: tests/data/npy)
"""
import os
import sys

import numpy as np
from numpy.lib import format as npf

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "npy")
os.makedirs(out, exist_ok=True)


def save(name, a, version=None):
    with open(os.path.join(out, name), "wb") as f:
        if version is None:
            np.save(f, a)
        else:
            npf.write_array(f, np.asanyarray(a), version=version)


def raw(name, header, data=b"", version=(1, 0)):
    """A hand-made file: exactly the header text given (no padding added)."""
    h = header.encode("latin1")
    if version[0] == 1:
        pre = b"\x93NUMPY" + bytes(version) + len(h).to_bytes(2, "little")
    else:
        pre = b"\x93NUMPY" + bytes(version) + len(h).to_bytes(4, "little")
    with open(os.path.join(out, name), "wb") as f:
        f.write(pre + h + data)


i6 = np.arange(6).reshape(2, 3)
# f32: v[i] = i * 0.5 - 1.25 (all exact in binary)
save("f32_2x3.npy", (i6 * 0.5 - 1.25).astype(np.float32))
# f16: v[i] = (i - 2) * 0.25
save("f16_2x3.npy", ((i6 - 2) * 0.25).astype(np.float16))
# f64: v[i] = i / 3 (not exact: the C++ test computes the same double)
save("f64_2x3.npy", (i6 / 3.0).astype(np.float64))
# i32: v[i] = (i - 3) * 1000003
save("i32_2x3.npy", ((i6 - 3) * 1000003).astype(np.int32))
# i64: v[i] = (i - 3) * 10^12
save("i64_2x3.npy", ((i6 - 3) * 10**12).astype(np.int64))
# bf16 as uint16 bit patterns of (i - 2) * 0.75, truncated from float32 (exact here)
bf = ((((i6 - 2) * 0.75).astype(np.float32).view(np.uint32)) >> 16).astype(np.uint16)
save("bf16_2x3.npy", bf)
# bf16 as a 2-byte void dtype, the way an ml_dtypes.bfloat16 array saves ('|V2' or '<V2')
save("bf16_void_2x3.npy", bf.view(np.dtype("V2")))
# shapes: 0-d, 1-d, empty, 4-d
save("f32_scalar.npy", np.array(3.5, dtype=np.float32))
save("i64_1d.npy", np.arange(7, dtype=np.int64) - 3)
save("f32_empty_0x3.npy", np.zeros((0, 3), dtype=np.float32))
save("i32_4d.npy", np.arange(2 * 1 * 3 * 2, dtype=np.int32).reshape(2, 1, 3, 2))
# format versions 2.0 and 3.0
save("f32_v2.npy", (i6 * 0.5 - 1.25).astype(np.float32), version=(2, 0))
save("f32_v3.npy", (i6 * 0.5 - 1.25).astype(np.float32), version=(3, 0))
# header text variants numpy accepts: no trailing comma, other key order, double quotes,
# tabs and newlines, 'L' suffixes of old Python 2 writers
d6 = (i6 * 0.5 - 1.25).astype(np.float32).tobytes()
raw("hdr_no_trailing_comma.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}\n", d6)
raw("hdr_reordered.npy", "{'shape': (2,3,), 'fortran_order': False, 'descr': '<f4'}   \n", d6)
raw("hdr_double_quotes.npy", '{"descr":"<f4","fortran_order":False,"shape":( 2 , 3 )}', d6)
raw("hdr_whitespace.npy", "{\t'descr' :\t'<f4' ,\n 'fortran_order' : False ,\n 'shape' : (2, 3) , }\n", d6)
raw("hdr_py2_long.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }\n", d6)
# fortran order: rejected for 2x3, accepted where it is the same layout (3x1)
save("f32_fortran_2x3.npy", np.asfortranarray((i6 * 0.5 - 1.25).astype(np.float32)))
raw("f32_fortran_3x1.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 1), }\n",
    np.array([1.0, 2.0, 3.0], dtype=np.float32).tobytes())
# rejected element types
save("f32_bigendian.npy", (i6 * 0.5 - 1.25).astype(">f4"))
save("u32.npy", np.arange(4, dtype=np.uint32))
save("bool.npy", np.array([True, False]))
save("u8.npy", np.arange(4, dtype=np.uint8))
save("structured.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
print("wrote fixtures to", os.path.normpath(out))
