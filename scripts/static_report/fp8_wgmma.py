"""What an fp8 wgmma kernel must be, whatever the baseline holds: its tensor instructions are
warpgroup MMAs on E4M3 operands (an fp8 GEMM compiled to a bf16/f16 one, or to an unpack plus
HMMA, moves twice the bytes it should), it loads with TMA (UTMALDG), and it uses no local memory
(a spill in a warp-specialized k-loop stalls both warpgroups)."""
from .sass import base_op, is_tensor

WARPGROUP_MMA = ("HGMMA", "QGMMA")


def wgmma_facts(insns):
    """The warpgroup-MMA opcodes of a kernel with their operand types, and its TMA loads."""
    ops = sorted({i["op"] for i in insns if is_tensor(i["op"])})
    return {
        "tensor_ops": ops,
        "wgmma": sum(1 for i in insns if base_op(i["op"]) in WARPGROUP_MMA),
        "utmaldg": sum(1 for i in insns if base_op(i["op"]) == "UTMALDG"),
    }


def e4m3_operands(op):
    """True for a warpgroup MMA whose two operand types are E4M3 (`QGMMA.64x128x32.F32.E4M3.E4M3`)."""
    parts = op.split(".")
    return base_op(op) in WARPGROUP_MMA and parts[-2:] == ["E4M3", "E4M3"]


def check_fp8_wgmma(kernels):
    """One line per fp8 wgmma kernel that breaks the rules above."""
    bad = []
    for k in kernels:
        if k.get("kind") != "wgmma" or k.get("variant", {}).get("dtype") != "e4m3":
            continue
        who = f"fp8 wgmma {k['name']}"
        f = k.get("wgmma_ops")
        if not f:
            bad.append(f"{who}: the report has no instruction facts for it (read it with this script's version)")
            continue
        if f["wgmma"] == 0:
            bad.append(f"{who}: issues no warpgroup MMA (HGMMA/QGMMA); tensor ops: {', '.join(f['tensor_ops']) or 'none'}")
        wrong = [op for op in f["tensor_ops"] if not e4m3_operands(op)]
        if wrong:
            bad.append(f"{who}: tensor instructions without E4M3 operands: {', '.join(wrong)}")
        if f["utmaldg"] == 0:
            bad.append(f"{who}: issues no TMA load (UTMALDG)")
        for field, what in (("local_bytes", "local memory bytes"), ("stack_bytes", "stack bytes"),
                            ("spill_stores", "spill stores"), ("spill_loads", "spill loads")):
            if k.get(field, 0) > 0:
                bad.append(f"{who}: {k[field]} {what}")
    return bad
