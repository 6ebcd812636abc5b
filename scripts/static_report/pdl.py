"""Programmatic dependent launch in SASS: griddepcontrol.wait compiles to ACQBULK and
griddepcontrol.launch_dependents to PREEXIT (docs/kernel-report.md, "Programmatic dependent launch")."""
from .sass import base_op, work

WAIT_OP, TRIGGER_OP = "ACQBULK", "PREEXIT"


def pdl_of(insns):
    """Whether a kernel waits and triggers, and the work instructions laid out before its first
    wait (None when it never waits): what it does before its predecessor's output is visible."""
    ops = [base_op(i["op"]) for i in insns]
    waits = WAIT_OP in ops
    before = sum(1 for i in insns[:ops.index(WAIT_OP)] if work(i["op"])) if waits else None
    return {"waits": waits, "triggers": TRIGGER_OP in ops, "before_wait": before}


def must_wait(k):
    """The kernels the library launches with the programmatic attribute: all of its own. CUTLASS's
    grouped GEMMs are launched by CUTLASS's adapter without it, so they never overlap a predecessor."""
    if k["family"] in ("router", "dispatch", "combine"):
        return True
    return k["family"] == "gmm" and k["kind"] != "wgmma"


def missing_waits(kernels):
    """One line per kernel that must wait and does not (reports without the figure are skipped)."""
    return [f"{k['family']} {k['kind'] or ''} ({k['name']}): no griddepcontrol.wait (ACQBULK): launched "
            f"programmatically it could read its predecessor's output before that is written"
            for k in kernels if must_wait(k) and k.get("pdl") is not None and not k["pdl"]["waits"]]
