"""Programmatic dependent launch in SASS: griddepcontrol.wait compiles to ACQBULK and
griddepcontrol.launch_dependents to PREEXIT (docs/kernel-report.md, "Programmatic dependent launch")."""
from .sass import base_op, work

WAIT_OP, TRIGGER_OP = "ACQBULK", "PREEXIT"
# Instructions that read global memory (LD is a generic load, which may be global): none may be
# laid out before the wait, when the predecessor's output may not be written yet.
GLOBAL_LOADS = ("LDG", "LD", "LDGSTS", "UTMALDG", "UBLKCP", "ATOMG", "ATOM", "UTMAPF")


def non_coherent(op):
    """A load through the non-coherent path (__ldg, ld.global.nc): LDG.E...CONSTANT in SASS."""
    parts = op.split(".")
    return parts[0] == "LDG" and "CONSTANT" in parts[1:]


PREFETCH_OP = "UBLKPF"  # cp.async.bulk.prefetch.L2: a read into L2, no data to a register


def strong_gpu(op):
    """A strong load at gpu scope (ld.relaxed.gpu): LDG.E...STRONG.GPU, never an L1 line."""
    parts = op.split(".")
    return parts[0] == "LDG" and "STRONG" in parts[1:] and "GPU" in parts[1:]


def early_block(insns):
    """The instructions a kernel runs ahead of its wait only when it reads its map early: the
    range (first index, end index) skipped by a forward branch laid out before the first ACQBULK
    that lands at or before it and holds a bulk L2 prefetch. None when the kernel has none."""
    ops = [base_op(i["op"]) for i in insns]
    if WAIT_OP not in ops:
        return None
    w = ops.index(WAIT_OP)
    index = {i["addr"]: n for n, i in enumerate(insns)}
    for n in range(w):
        i = insns[n]
        t = i["target"]
        if ops[n] == "BRA" and i["text"].startswith("@") and t is not None and i["addr"] < t <= insns[w]["addr"]:
            end = index.get(t)
            if end is not None and PREFETCH_OP in ops[n + 1:end]:
                return (n + 1, end)
    return None


def pdl_of(insns):
    """Whether a kernel waits and triggers, the work instructions laid out before its first wait
    (None when it never waits), how many waits it has, which global loads come before the first
    one, how many non-coherent loads it has anywhere, and its bulk L2 prefetches before the wait
    and in all."""
    ops = [base_op(i["op"]) for i in insns]
    waits = WAIT_OP in ops
    first = ops.index(WAIT_OP) if waits else len(ops)
    before = sum(1 for i in insns[:first] if work(i["op"])) if waits else None
    early = [f"{i['addr']:04x} {i['op']}" for i in insns[:first] if base_op(i["op"]) in GLOBAL_LOADS] if waits else []
    return {"waits": waits, "triggers": TRIGGER_OP in ops, "before_wait": before, "wait_count": ops.count(WAIT_OP),
            "loads_before_wait": early, "nc_loads": sum(1 for i in insns if non_coherent(i["op"])),
            "prefetch_before_wait": ops[:first].count(PREFETCH_OP) if waits else 0, "prefetches": ops.count(PREFETCH_OP)}


def must_wait(k):
    """The kernels the library launches with the programmatic attribute: all of its own. CUTLASS's
    grouped GEMMs are launched by CUTLASS's adapter without it, so they never overlap a predecessor."""
    if k["family"] in ("router", "dispatch", "combine", "layer"):
        return True
    return k["family"] == "gmm" and k["kind"] != "wgmma"


def reads_map_early(k):
    """The kernels whose tile map may be older than their predecessor (the layer's decode front
    writes down's; KernelArgs::map_early): the 16-row down tiles of the mma and fp8 kinds. Before
    their wait they read the map with strong loads and send their first tile's weights to L2."""
    cfg, var = k.get("config") or {}, k.get("variant") or {}
    return (k["family"] == "gmm" and k["kind"] in ("mma", "mma-fp8") and cfg.get("block_m") == 16
            and var.get("stage") == "down")


def missing_waits(kernels):
    """One line per kernel launched programmatically that breaks a rule of its wait (reports without
    the figures are skipped): it must wait exactly once, read no global memory before the wait and
    read nothing through the non-coherent path, which ptxas may move above the wait."""
    bad = []
    for k in kernels:
        p = k.get("pdl")
        if not must_wait(k) or p is None:
            continue
        who = f"{k['family']} {k['kind'] or ''} ({k['name']})"
        if not p["waits"]:
            bad.append(f"{who}: no griddepcontrol.wait (ACQBULK): launched programmatically it could read its "
                       f"predecessor's output before that is written")
            continue
        if p.get("wait_count", 1) != 1:
            bad.append(f"{who}: {p['wait_count']} griddepcontrol.waits (ACQBULK), must be exactly one: a path "
                       f"with its own wait can load before another path's")
        early_reads = reads_map_early(k)
        loads = p.get("loads_before_wait") or []
        if early_reads:
            # Strong loads of the map (never an L1 copy of the previous call's) may come first.
            loads = [x for x in loads if not strong_gpu(x.split()[1])]
            if not p.get("prefetch_before_wait"):
                bad.append(f"{who}: no bulk L2 prefetch (UBLKPF) before griddepcontrol.wait (ACQBULK): a decode "
                           f"down tile starts its first tile's weights ahead of the wait when its map is early")
        if loads:
            p = dict(p, loads_before_wait=loads)
            bad.append(f"{who}: global loads laid out before griddepcontrol.wait (ACQBULK): "
                       f"{', '.join(p['loads_before_wait'][:4])}: they may read the predecessor's output "
                       f"before it is written")
        if k["family"] == "layer" and k.get("kind") == "decode-front" and not p.get("prefetches"):
            bad.append(f"{who}: no bulk L2 prefetch (UBLKPF): with l2_prefetch the decode front sends the routed "
                       f"experts' weights toward L2 once it has routed")
        if p.get("nc_loads"):
            bad.append(f"{who}: {p['nc_loads']} non-coherent loads (LDG...CONSTANT, from __ldg): ptxas may move "
                       f"them above griddepcontrol.wait; read with plain loads")
    return bad
