"""SASS as nvdisasm prints it, parsed into instructions that keep the source lines they came from,
and the loops of a kernel (a loop is a backward branch)."""
import re

TENSOR_OPS = ("HMMA", "HGMMA", "IMMA", "IGMMA", "QGMMA", "GMMA", "DMMA", "BMMA", "UMMA")
FREE_OPS = ("NOP",)  # padding the scheduler never issues as work


INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
LABEL = re.compile(r"^(\.L_x_\d+):")
FUNC = re.compile(r"^\.text\.(\S+):")
FRAME = re.compile(r'"([^"]+)", line (\d+)')
TARGET = re.compile(r"`\((\.L_x_\d+)\)")


def parse_sass(text):
    """{mangled name: [insn]}; an insn is dict(addr, op, text, frames, target), frames being the
    source (file, line) of the instruction and of each call it was inlined into, innermost first."""
    funcs, cur, labels, frames, in_chain = {}, None, {}, [(None, 0)], False
    pending = []
    for raw in text.splitlines():
        m = FUNC.match(raw)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            frames = [(None, 0)]
            continue
        m = LABEL.match(raw)
        if m:
            pending.append(m.group(1))
            continue
        if raw.lstrip().startswith("//## File"):
            # With -gi an inlined instruction gets one line per call level, innermost first.
            here = FRAME.findall(raw)
            if here:
                frame = (here[0][0], int(here[0][1]))
                frames = frames + [frame] if in_chain else [frame]
            in_chain = True
            continue
        in_chain = False
        m = INSN.match(raw)
        if m and cur is not None:
            addr, body = int(m.group(1), 16), m.group(2)
            for lab in pending:
                labels[lab] = addr
            pending = []
            words = body.split()
            op_word = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
            t = TARGET.search(body)
            cur.append({"addr": addr, "op": op_word, "text": body, "frames": frames,
                        "file": frames[0][0], "line": frames[0][1], "target": t.group(1) if t else None})
    for insns in funcs.values():
        for i in insns:
            if i["target"] is not None:
                i["target"] = labels.get(i["target"])
    return funcs


def base_op(op):
    return op.split(".")[0]


def is_tensor(op):
    return base_op(op) in TENSOR_OPS


def loops_of(insns):
    """Loops as (first index, last index, back-branch insn): a branch to an earlier address."""
    index = {i["addr"]: n for n, i in enumerate(insns)}
    out = []
    for n, i in enumerate(insns):
        if base_op(i["op"]) in ("BRA", "JMP") and i["target"] is not None and i["target"] <= i["addr"]:
            if i["target"] in index:
                out.append((index[i["target"]], n, i))
    # One loop per header: a `continue` makes several back branches to one place.
    merged = {}
    for a, b, br in out:
        if a not in merged or b > merged[a][1]:
            merged[a] = (a, b, br)
    return sorted(merged.values())


def innermost(loops, pred):
    """The loops satisfying pred that contain no other loop satisfying it."""
    hits = [lp for lp in loops if pred(lp)]
    return [lp for lp in hits if not any(o is not lp and lp[0] <= o[0] and o[1] <= lp[1] for o in hits)]


def count(insns, a, b, pred):
    return sum(1 for i in insns[a:b + 1] if pred(i["op"]))


def work(op):
    return base_op(op) not in FREE_OPS
