"""What the 4-bit decode kernel (kernels/gmm/w4_mma/) must be, whatever the baseline says: its
copies into shared memory 16 bytes wide (LDGSTS...128: the packed codes are half a byte per
element, so narrower copies would multiply the load instructions), no local memory, stack or
spills, and at most MAX_DEQUANT_PER_BYTE integer and bf16x2 instructions in its k-loop per
weight byte turned into bf16 (the permute, shifts, masks and fma of the register dequantizer)."""
from .sass import count, innermost, is_tensor
from .sass import base_op

# The checkpoint layout's dequantizer: about 7 (mxfp4) and 4 (int4) per byte, plus the loop's
# address and zero-point arithmetic; a prepared layout would need fewer.
MAX_DEQUANT_PER_BYTE = 12.0
DEQUANT_OPS = ("PRMT", "LOP3", "SHF", "SHL", "SHR", "IMAD.SHL", "HFMA2", "HMUL2", "HADD2")


def is_dequant(op):
    return base_op(op) in DEQUANT_OPS or op.startswith("IMAD.SHL") or op.startswith("HFMA2.BF16")


def w4_facts(insns, loops, config):
    """LDGSTS widths over the kernel; dequantizing instructions in the k-loop (the innermost loop
    with the most tensor instructions, as gmm_loop picks it) per weight byte a lane dequantizes
    (each m16n8k16 consumes 64 bytes of codes per warp, 2 a lane, shared by the block_m/16 m16 tiles)."""
    ldgsts = [i["op"] for i in insns if base_op(i["op"]) == "LDGSTS"]
    r = {"ldgsts_128": sum(1 for op in ldgsts if ".128" in op), "ldgsts_narrow": sum(1 for op in ldgsts if ".128" not in op)}
    tensor_loops = innermost(loops, lambda lp: count(insns, lp[0], lp[1], is_tensor) > 0)
    if tensor_loops:
        a, b, _ = max(tensor_loops, key=lambda lp: (count(insns, lp[0], lp[1], is_tensor), -(lp[1] - lp[0])))
        body = insns[a:b + 1]
        tensor = sum(1 for i in body if is_tensor(i["op"]))
        mt = max(1, (config or {}).get("block_m", 16) // 16)
        r["dequant_ops"] = sum(1 for i in body if is_dequant(i["op"]))
        r["dequant_per_byte"] = round(r["dequant_ops"] / (tensor * 2 / mt), 3)
    return r


def check_w4_decode(kernels):
    """One line per 4-bit decode kernel breaking a rule."""
    bad = []
    for k in kernels:
        if k.get("kind") != "mma-w4":
            continue
        who = f"4-bit decode {k['name']}"
        for field in ("local_bytes", "stack_bytes", "spill_stores", "spill_loads"):
            if k.get(field, 0) > 0:
                bad.append(f"{who}: {field} {k[field]} (must be 0)")
        f = k.get("w4")
        if f is None:
            bad.append(f"{who}: the report has no 4-bit facts for it (read it with this script's version)")
            continue
        if f["ldgsts_128"] == 0 or f["ldgsts_narrow"] > 0:
            bad.append(f"{who}: copies into shared memory must all be LDGSTS.128 ({f['ldgsts_128']} wide, "
                       f"{f['ldgsts_narrow']} narrower)")
        d = f.get("dequant_per_byte")
        if d is not None and d > MAX_DEQUANT_PER_BYTE:
            bad.append(f"{who}: {d} dequantizing instructions per weight byte in the k-loop, above {MAX_DEQUANT_PER_BYTE}")
    return bad
