"""The hot loops of the gmm, gather and combine kernels, and the gmm kernels' path to their first
operand load, read from their SASS."""
from .sass import base_op, count, innermost, is_tensor, work


CONVERSIONS = ("F2FP", "F2F", "HADD2", "HMUL2", "PRMT", "I2F", "I2FP")


def gmm_loop(insns, loops):
    """k-loop figures: the innermost loop with the most tensor instructions (the consumers' HGMMA
    loop in a warp-specialized kernel), and the producer's TMA loop when there is one."""
    tensor_loops = innermost(loops, lambda lp: count(insns, lp[0], lp[1], is_tensor) > 0)
    if not tensor_loops:
        return None
    a, b, _ = max(tensor_loops, key=lambda lp: (count(insns, lp[0], lp[1], is_tensor), -(lp[1] - lp[0])))
    body = insns[a:b + 1]
    n = sum(1 for i in body if work(i["op"]))
    tensor = sum(1 for i in body if is_tensor(i["op"]))
    ldgsts = sum(1 for i in body if base_op(i["op"]) == "LDGSTS")
    r = {
        "instructions": n,
        "tensor": tensor,
        "tensor_ops": sorted({base_op(i["op"]) for i in body if is_tensor(i["op"])}),
        "ldgsts": ldgsts,
        "utmaldg": sum(1 for i in body if base_op(i["op"]) == "UTMALDG"),
        "ldsm": sum(1 for i in body if base_op(i["op"]) == "LDSM"),
        # fp8 on HMMA: the e4m3 -> f16 unpacking (F2FP) and any half-precision fix-up around it.
        "conversions": sum(1 for i in body if base_op(i["op"]) in CONVERSIONS),
        "non_tensor_per_tensor": round((n - tensor) / tensor, 3),
    }
    if ldgsts:
        # The cp.async half: from the loop's head to its last LDGSTS, less the tensor and
        # ldmatrix work the scheduler interleaves there.
        last = max(k for k, i in enumerate(body) if base_op(i["op"]) == "LDGSTS")
        half = [i for i in body[:last + 1] if work(i["op"]) and not is_tensor(i["op"])
                and base_op(i["op"]) not in ("LDSM", "LDGSTS")]
        r["non_tensor_per_ldgsts"] = round(len(half) / ldgsts, 3)
    if ldgsts:
        ring = ring_loop(insns, tensor_loops, (a, b))
        if ring:
            r["ring_loop"] = ring
    tma = innermost(loops, lambda lp: count(insns, lp[0], lp[1], lambda op: base_op(op) == "UTMALDG") > 0)
    if tma:
        pa, pb, _ = max(tma, key=lambda lp: lp[1] - lp[0])
        if (pa, pb) != (a, b):
            r["producer_loop"] = {"instructions": count(insns, pa, pb, work),
                                  "utmaldg": count(insns, pa, pb, lambda op: base_op(op) == "UTMALDG")}
    return r


def ring_loop(insns, tensor_loops, k_loop):
    """The mma kernel's other tensor loop, where the slices the k-loop's whole trips leave are
    multiplied (the remainder of K, all of it when K is short): its own mix, which the k-loop's
    figure does not show."""
    rest = [lp for lp in tensor_loops if (lp[0], lp[1]) != k_loop]
    if not rest:
        return None
    a, b, _ = max(rest, key=lambda lp: (count(insns, lp[0], lp[1], is_tensor), -(lp[1] - lp[0])))
    n, tensor = count(insns, a, b, work), count(insns, a, b, is_tensor)
    return {"instructions": n, "tensor": tensor, "non_tensor_per_tensor": round((n - tensor) / tensor, 3)}


def first_load(insns, skip=None):
    """Instructions (in address order) before the kernel's first LDGSTS or UTMALDG: what a CTA
    executes at most before its first operand load is on its way; None without either. `skip`:
    an index range [a, b) a CTA branches over on the path measured (pdl.early_block: the early
    prefetch, whose CTAs find their weights in L2 already)."""
    a, b = skip or (0, 0)
    for k, i in enumerate(insns):
        if base_op(i["op"]) in ("LDGSTS", "UTMALDG"):
            return sum(1 for n, j in enumerate(insns[:k]) if work(j["op"]) and not a <= n < b)
    return None


def is_load128(op):
    parts = op.split(".")
    return parts[0] in ("LDG", "LD") and "128" in parts


def is_store128(op):
    parts = op.split(".")
    return parts[0] in ("STG", "ST") and "128" in parts


def memory_loop(insns, loops):
    """gather/combine: whether global loads/stores are 128-bit, and the instructions their hot loop
    (the innermost loop with the most global loads) spends per 128-bit load."""
    glob = lambda op: base_op(op) in ("LDG", "LD")
    r = {
        "ldg": sum(1 for i in insns if glob(i["op"])),
        "ldg128": sum(1 for i in insns if is_load128(i["op"])),
        "stg": sum(1 for i in insns if base_op(i["op"]) in ("STG", "ST")),
        "stg128": sum(1 for i in insns if is_store128(i["op"])),
    }
    hot = innermost(loops, lambda lp: count(insns, lp[0], lp[1], glob) > 0)
    if hot:
        a, b, _ = max(hot, key=lambda lp: (count(insns, lp[0], lp[1], glob), lp[1] - lp[0]))
        n, l128 = count(insns, a, b, work), count(insns, a, b, is_load128)
        r["loop"] = {"instructions": n, "ldg128": l128,
                     "instructions_per_ldg128": round(n / l128, 3) if l128 else None}
    return r


def vector_loop(insns, loops, loads):
    """combine (loads) and gather-by-token (stores): the cost of one 16-byte vector of one slot.
    Their slot loop is the innermost loop with the most 128-bit global loads (combine: rows in
    flight together) or stores (gather-by-token: the token's row to each of its rows); its
    instructions per 128-bit access. None when the kernel moves no 16-byte vectors."""
    is128 = is_load128 if loads else is_store128
    hot = innermost(loops, lambda lp: count(insns, lp[0], lp[1], is128) > 0)
    if not hot:
        return None
    a, b, _ = max(hot, key=lambda lp: (count(insns, lp[0], lp[1], is128), lp[1] - lp[0]))
    n, v = count(insns, a, b, work), count(insns, a, b, is128)
    return {"instructions": n, "vectors": v, "per_vector": round(n / v, 3)}
