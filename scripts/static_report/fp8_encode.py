"""What a kernel that writes e4m3 codes must be: it encodes with the hardware's f32 -> e4m3x2
conversion (F2FP...E4M3, PTX cvt.rn.satfinite.e4m3x2.f32). The same rule done with integer
instructions costs about twenty instructions and branches per value, which made the quantizing
gather compute-bound at 30% of copy bandwidth on an H200."""
from .sass import base_op


def encodes_e4m3(op):
    """`F2FP.SATFINITE.E4M3.F32.PACK_AB_MERGE_C`, not the decoding `F2FP.F16.E4M3.UNPACK_B`."""
    parts = op.split(".")
    return base_op(op) == "F2FP" and "E4M3" in parts and "F32" in parts


def encode_facts(insns):
    """How many f32 -> e4m3 pair conversions the kernel issues."""
    return {"e4m3_converts": sum(1 for i in insns if encodes_e4m3(i["op"]))}


def writes_codes(k):
    """The kernels that quantize into e4m3: the fp8 gather, the silu*up+quant pass, and the fp8
    mma up tiles wide enough (128 h columns) to quantize h in their epilogue."""
    v = k.get("variant") or {}
    if v.get("dtype") != "fp8":
        return False
    if k.get("kind") in ("gather", "fp8-silu-quant"):
        return True
    return k.get("kind") == "mma-fp8" and v.get("stage") == "up" and (k.get("config") or {}).get("block_n") == 256


def check_fp8_encode(kernels):
    """One line per code-writing kernel that encodes without the hardware conversion."""
    bad = []
    for k in kernels:
        if not writes_codes(k):
            continue
        f = k.get("encode")
        if f is None:
            bad.append(f"fp8 encode {k['name']}: the report has no conversion facts for it (read it with this script's version)")
        elif f["e4m3_converts"] == 0:
            bad.append(f"fp8 encode {k['name']}: writes e4m3 codes without F2FP.SATFINITE.E4M3 (a software conversion)")
    return bad
