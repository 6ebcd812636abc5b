"""The aligner's warp-instructions per routed slot, read from its per-slot loops. The kernel
source tags each loop that walks the slots on the line of its `for`:
`// per-slot loop: N slots a lane` (one trip moves 32 x N slots a warp). A tagged loop is a SASS
loop whose backward branch comes from that line; where the compiler made several copies, the
longest counts. The figure is the sum over tagged loops of instructions per trip / slots."""
import re

from .sass import count, work

TAG = re.compile(r"//\s*per-slot loop:\s*(\d+)\s+slots?\s+a\s+lane")


def tags(insns, sources):
    """{(file, line): slots a lane} of the tagged lines in the files the kernel's code comes from."""
    out = {}
    for path in sorted({i["file"] for i in insns if i["file"]}):
        for n, text in enumerate(sources.lines(path), 1):
            m = TAG.search(text)
            if m:
                out[(path, n)] = int(m.group(1))
    return out


def per_slot(insns, loops, sources):
    found = []
    for (path, line), lanes in sorted(tags(insns, sources).items()):
        mine = [lp for lp in loops if lp[2]["file"] == path and lp[2]["line"] == line]
        if mine:
            n = max(count(insns, a, b, work) for a, b, _ in mine)
            found.append({"line": line, "instructions": n, "slots": 32 * lanes})
    if not found:
        return None
    return {"warp_instructions": round(sum(f["instructions"] / f["slots"] for f in found), 3), "loops": found}
