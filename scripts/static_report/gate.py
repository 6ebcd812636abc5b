"""The CI gate: the regressions of a report against a baseline (docs/kernel-report.md, "The gate")."""
from . import SCHEMA
from .configs import config_str
from .fp8_encode import check_fp8_encode
from .fp8_wgmma import check_fp8_wgmma
from .layer_kernels import check_layer_kernels
from .occupancy import occupancy_of
from .pdl import missing_waits
from .w4_decode import check_w4_decode
from .tools import fail

# Gate thresholds (docs/kernel-report.md).
LOOP_GROWTH = 0.05
# A 16-row mma tile multiplies its last slices in the ring loop (all of them when K is short):
# its non-tensor instructions per HMMA may not pass this, whatever the baseline says.
RING_MAX_DECODE = 5.0


def check(base, new):
    """Regressions of `new` against `base`, one line each. New kernels are fine; vanished ones are
    noted (a renamed or retired instantiation), never a failure."""
    if base.get("schema") != SCHEMA or new.get("schema") != SCHEMA:
        fail(f"both reports must be {SCHEMA}")
    # Absolute, not against the baseline: a kernel that stops waiting is a race, not a slowdown.
    bad, notes = missing_waits(new["kernels"]), []
    old = {(k["name"], k["arch"]): k for k in base["kernels"]}
    seen = set()
    for k in new["kernels"]:
        key = (k["name"], k["arch"])
        seen.add(key)
        b = old.get(key)
        if b is None:
            continue
        who = f"{k['family'] or '?'} {config_str(k['config'])} {' '.join(map(str, k['variant'].values()))} ({k['name']})"
        for field, what in (("spill_stores", "spill stores"), ("spill_loads", "spill loads"), ("stack_bytes", "stack bytes"),
                            ("local_bytes", "local memory bytes")):
            if b[field] == 0 and k[field] > 0:
                bad.append(f"{who}: {what} 0 -> {k[field]}")
        if k["registers"] > b["registers"]:
            # Recomputed, not read: a report's occupancy follows from its registers, threads, smem.
            before, after = occupancy_of(b), occupancy_of(k)
            for dev in after:
                o, n = before[dev]["ctas_per_sm"], after[dev]["ctas_per_sm"]
                if n < o:
                    bad.append(f"{who}: registers {b['registers']} -> {k['registers']} lose an occupancy step on {dev}: "
                               f"{o} -> {n} CTAs/SM")
                    break
        # Per tensor instruction, not per loop trip: unrolling more k-slices into one trip makes
        # the loop longer and each slice cheaper, and only the second is what the gate guards.
        bl, nl = b.get("k_loop"), k.get("k_loop")
        if bl and nl and bl.get("tensor") and nl.get("tensor"):
            o, n = bl["instructions"] / bl["tensor"], nl["instructions"] / nl["tensor"]
            if n > o * (1 + LOOP_GROWTH):
                bad.append(f"{who}: k-loop {o:.3g} -> {n:.3g} instructions per {'/'.join(nl['tensor_ops'])} "
                           f"({bl['instructions']}/{bl['tensor']} -> {nl['instructions']}/{nl['tensor']}, > +5%)")
        br, nr = (bl or {}).get("ring_loop"), (nl or {}).get("ring_loop")
        if br and nr and nr["non_tensor_per_tensor"] > br["non_tensor_per_tensor"] * (1 + LOOP_GROWTH):
            bad.append(f"{who}: ring loop {br['non_tensor_per_tensor']:.3g} -> {nr['non_tensor_per_tensor']:.3g} "
                       f"non-tensor instructions per tensor instruction (> +5%)")
        if nr and (k.get("config") or {}).get("block_m") == 16 and nr["non_tensor_per_tensor"] > RING_MAX_DECODE:
            bad.append(f"{who}: ring loop {nr['non_tensor_per_tensor']:.3g} non-tensor instructions per tensor "
                       f"instruction, above {RING_MAX_DECODE} for a 16-row decode tile")
        bf, nf = b.get("first_load_after"), k.get("first_load_after")
        if bf is not None and nf is not None and nf > bf * (1 + LOOP_GROWTH) + 1:
            bad.append(f"{who}: first operand load after {bf} -> {nf} instructions (> +5%)")
        for p, n in k.get("per_row", {}).items():
            o = b.get("per_row", {}).get(p)
            if o and n > o * (1 + LOOP_GROWTH):
                bad.append(f"{who}: {p} row {o} -> {n} warp-instructions (> +5%)")
        bp, np_ = b.get("per_slot"), k.get("per_slot")
        if bp and np_ and np_["warp_instructions"] > bp["warp_instructions"] * (1 + LOOP_GROWTH):
            bad.append(f"{who}: {bp['warp_instructions']:.3g} -> {np_['warp_instructions']:.3g} warp-instructions "
                       f"per routed slot (> +5%)")
        bm, nm = b.get("memory"), k.get("memory")
        if bm and nm:
            for f, what in (("ldg128", "128-bit loads"), ("stg128", "128-bit stores")):
                if bm[f] > 0 and nm[f] == 0:
                    bad.append(f"{who}: {what} {bm[f]} -> 0")
            bs, ns = bm.get("slot_loop"), nm.get("slot_loop")
            if bs and ns and ns["per_vector"] > bs["per_vector"] * (1 + LOOP_GROWTH):
                bad.append(f"{who}: slot loop {bs['per_vector']:.3g} -> {ns['per_vector']:.3g} instructions per "
                           f"16-byte vector per slot (> +5%)")
    for key, b in old.items():
        if key not in seen:
            notes.append(f"not in the new report (retired or renamed): {b['name']}")
    # Rules, not comparisons: they hold for fp8 wgmma kernels the baseline has never seen too.
    bad += check_fp8_wgmma(new["kernels"])
    bad += check_fp8_encode(new["kernels"])
    bad += check_w4_decode(new["kernels"])
    for p, b in base.get("router_best", {}).items():
        n = new.get("router_best", {}).get(p)
        if n and n["per_row"] > b["per_row"] * (1 + LOOP_GROWTH):
            bad.append(f"router best for {p}: {b['per_row']} -> {n['per_row']} warp-instructions per row (> +5%)")
    if new.get("layer_kernels"):
        bad += check_layer_kernels(base.get("layer_kernels"), new["layer_kernels"])
    else:
        notes.append("no layer kernel counts in the new report (built without the moebench binary)")
    return bad, notes
