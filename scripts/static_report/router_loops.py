"""The router's row loop: its runtime loops named by their bounds in the source, and the
warp-instructions one row costs on a preset's path (docs/kernel-report.md)."""
import math
import os
import re

from .sass import work

# The checkout: this file is scripts/static_report/router_loops.py.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Sources:
    """Source lines by the path the line table names (its part from kernels/ on, in this checkout)."""

    def __init__(self):
        self.cache = {}

    def lines(self, path):
        if not path or "kernels/" not in path:
            return []
        rel = path[path.rfind("kernels/"):]
        if rel not in self.cache:
            try:
                with open(os.path.join(ROOT, rel)) as f:
                    self.cache[rel] = f.read().splitlines()
            except OSError:
                self.cache[rel] = []
        return self.cache[rel]

    def line(self, path, n):
        lines = self.lines(path)
        return lines[n - 1] if 0 < n <= len(lines) else ""


def block_end(lines, start):
    """The line (1-based) closing the first brace opened at or after line `start`. A brace closed
    before it (the `}` of `} else {`) is not part of the block."""
    depth, opened = 0, False
    for n in range(start - 1, len(lines)):
        for ch in lines[n]:
            if ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}" and opened:
                depth -= 1
                if depth == 0:
                    return n + 1
    return len(lines)


def router_regions(lines):
    """Source spans of the row's data-independent paths: {condition: [(first, last)]}. The
    condition names the kernel argument that selects the span (docs/kernel-report.md)."""
    spans = {}
    for n, text in enumerate(lines, 1):
        m = re.search(r"static void (lane_groups|any_groups)\s*\(", text)
        if m:
            spans.setdefault(m.group(1), []).append((n, block_end(lines, n)))
        m = re.search(r"\bif \(a\.(sigmoid|bias)\) \{", text)
        if m:
            end = block_end(lines, n)
            spans.setdefault(m.group(1), []).append((n, end))
            if re.search(r"\}\s*else\s*\{", lines[end - 1]):
                spans.setdefault("not_" + m.group(1), []).append((end, block_end(lines, end)))
    return spans


BOUND = re.compile(r"for\s*\(([^;]*);\s*\w+\s*<\s*(a\.)?(\w+)\s*;\s*([^)]*)\)")


def router_rows(insns, loops, sources, lanes):
    """The row loop and the runtime loops inside it, each named by its bound in the source."""
    named = []
    for a, b, br in loops:
        m = BOUND.search(sources.line(br["file"], br["line"]))
        # The back branch's line may be the loop's last statement: look at the header too.
        if not m:
            m = BOUND.search(sources.line(insns[a]["file"], insns[a]["line"]))
        bound = m.group(3) if m else None
        named.append({"a": a, "b": b, "bound": bound, "per_lane_step": bool(m and "LANES" in m.group(4)),
                      "where": f"{os.path.basename(br['file'] or '?')}:{br['line']}"})
    rows = [lp for lp in named if lp["bound"] == "T"]
    if not rows:
        return None
    row = max(rows, key=lambda lp: lp["b"] - lp["a"])
    inner = [lp for lp in named if row["a"] <= lp["a"] and lp["b"] <= row["b"] and lp is not row]
    return {"row": row, "inner": inner, "rows_per_warp": 32 // lanes}


def router_per_row(insns, rr, path, lanes, sources):
    """Warp-instructions per row on one preset's path: the row loop's instructions, less the spans
    the preset's kernel arguments skip, its runtime loops counted their trip count times, over the
    rows a warp handles at once."""
    trips = {"k": path["k"], "TG": path["TG"], "G": path["G"], "S": path["S"],
             "span": path["lpg_shift"] if path["group_mode"] == 1 else int(math.log2(lanes))}
    skip = set()
    skip.add("not_sigmoid" if path["sigmoid"] else "sigmoid")
    if not path["bias"]:
        skip.add("bias")
    skip.update({1: ["any_groups"], 2: ["lane_groups"]}.get(path["group_mode"], ["lane_groups", "any_groups"]))
    a0, b0 = rr["row"]["a"], rr["row"]["b"]
    weight = [1.0] * (b0 - a0 + 1)
    unknown = []
    for lp in rr["inner"]:
        if lp["bound"] in trips:
            t = trips[lp["bound"]]
            if lp["per_lane_step"]:
                t = math.ceil(t / lanes)
        else:
            t = 1
            unknown.append(lp["where"])
        for k in range(lp["a"], lp["b"] + 1):
            weight[k - a0] *= t
    regions = {}
    total = 0.0
    for w, i in zip(weight, insns[a0:b0 + 1]):
        if not work(i["op"]):
            continue
        skipped = False
        for f, line in i["frames"]:
            if f and f not in regions:
                regions[f] = router_regions(sources.lines(f))
            if f and any(a <= line <= b for name in skip for a, b in regions[f].get(name, [])):
                skipped = True
                break
        if not skipped:
            total += w
    return round(total / rr["rows_per_warp"]), unknown
