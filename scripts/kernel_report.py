#!/usr/bin/env python3
"""Static report of every compiled kernel, read from the built objects with cuobjdump/nvdisasm.

    scripts/kernel_report.py BUILD [--json OUT.json] [--markdown OUT.md] [--check BASELINE]
    scripts/kernel_report.py --report REPORT.json --check BASELINE      (gate a saved report)
    scripts/kernel_report.py BUILD --update results/static/sm90a.json   (a deliberate change)

Writes `moebench/kernel-report@1` JSON and a markdown table; --check exits 1 when the report
regresses against the baseline (docs/kernel-report.md says what counts). python3 stdlib only.
"""
import argparse
import concurrent.futures
import json
import math
import os
import re
import subprocess
import sys
import tempfile

SCHEMA = "moebench/kernel-report@1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Hopper (H100 and H200 are both sm_90 with the same SM): the limits occupancy is computed from.
DEVICES = {
    "h100": {"regs": 65536, "smem": 228 * 1024, "smem_block": 227 * 1024, "threads": 2048, "ctas": 32},
    "h200": {"regs": 65536, "smem": 228 * 1024, "smem_block": 227 * 1024, "threads": 2048, "ctas": 32},
}
REG_GRANULE = 256    # registers are allocated per warp in blocks of 256
SMEM_RESERVED = 1024  # the driver reserves 1 KB of shared memory per CTA on sm_8x/sm_9x

TENSOR_OPS = ("HMMA", "HGMMA", "IMMA", "IGMMA", "QGMMA", "GMMA", "DMMA", "BMMA", "UMMA")
FREE_OPS = ("NOP",)  # padding the scheduler never issues as work

# Gate thresholds (docs/kernel-report.md).
LOOP_GROWTH = 0.05


def fail(msg, code=2):
    print(f"kernel_report: {msg}", file=sys.stderr)
    sys.exit(code)


# ---------------------------------------------------------------------------- tools and inputs

def cmake_cache(build):
    cache = {}
    path = os.path.join(build, "CMakeCache.txt")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                m = re.match(r"^([A-Za-z_0-9]+):[A-Z]+=(.*)$", line.strip())
                if m:
                    cache[m.group(1)] = m.group(2)
    return cache


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if p.returncode != 0:
        fail(f"`{' '.join(cmd)}` failed: {p.stderr.strip().splitlines()[-1:] or p.returncode}")
    return p.stdout


def demangle(names):
    try:
        p = subprocess.run(["c++filt"], input="\n".join(names), stdout=subprocess.PIPE, text=True)
        out = p.stdout.splitlines()
        if p.returncode == 0 and len(out) == len(names):
            return out
    except OSError:
        pass
    return list(names)


def stable_name(demangled):
    """The kernel's name without what changes between builds (anonymous namespaces' hashes)."""
    return re.sub(r"_GLOBAL__N__\w+", "(anonymous namespace)", demangled)


# ---------------------------------------------------------------------------- SASS parsing

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


# ---------------------------------------------------------------------------- hot loops

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
        "non_tensor_per_tensor": round((n - tensor) / tensor, 3),
    }
    if ldgsts:
        # The cp.async half: from the loop's head to its last LDGSTS, less the tensor and
        # ldmatrix work the scheduler interleaves there.
        last = max(k for k, i in enumerate(body) if base_op(i["op"]) == "LDGSTS")
        half = [i for i in body[:last + 1] if work(i["op"]) and not is_tensor(i["op"])
                and base_op(i["op"]) not in ("LDSM", "LDGSTS")]
        r["non_tensor_per_ldgsts"] = round(len(half) / ldgsts, 3)
    tma = innermost(loops, lambda lp: count(insns, lp[0], lp[1], lambda op: base_op(op) == "UTMALDG") > 0)
    if tma:
        pa, pb, _ = max(tma, key=lambda lp: lp[1] - lp[0])
        if (pa, pb) != (a, b):
            r["producer_loop"] = {"instructions": count(insns, pa, pb, work),
                                  "utmaldg": count(insns, pa, pb, lambda op: base_op(op) == "UTMALDG")}
    return r


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


# ---------------------------------------------------------------------------- kernels -> configs

def ints(args):
    return [int(x) for x in re.findall(r"-?\d+", args)]


def template_args(name, template):
    m = re.search(r"\b" + re.escape(template) + r"<([^<>]*)>\(", name)
    return [a.strip() for a in m.group(1).split(",")] if m else None


def bool_arg(s):
    return s in ("true", "1")


ELEM_BYTES = {"float": 4, "__half": 2, "__nv_bfloat16": 2}


def identify(name, static, obj=None):
    """Family, config parameters fixed by the template arguments (those left out are runtime
    parameters of the same kernel), the variant, and the launch threads when the template fixes
    them. None when the kernel is unknown to this script: it is listed as unmapped."""
    if (t := template_args(name, "gmm_mma_kernel")):
        bm, bn, bk, wm, wn, st = (int(x) for x in t[:6])
        cfg = {"block_m": bm, "block_n": bn, "block_k": bk, "warps_m": wm, "warps_n": wn, "stages": st}
        dyn = next((g["dynamic_smem_bytes"] for g in static.get("gmm_tiles", [])
                    if all(g[k] == v for k, v in cfg.items())), None)
        return {"family": "gmm", "kind": "mma", "config": cfg,
                "variant": {"stage": "up" if bool_arg(t[6]) else "down", "dtype": "bf16" if bool_arg(t[7]) else "f16"},
                "threads": wm * wn * 32, "dynamic_smem_bytes": dyn}
    if (t := template_args(name, "gmm_finalize_kernel")):
        return {"family": "gmm", "kind": "finalize", "config": {"split_k": ">1"},
                "variant": {"stage": "up" if bool_arg(t[0]) else "down", "dtype": "bf16" if bool_arg(t[1]) else "f16"}}
    if (t := template_args(name, "router_kernel")):
        lanes, epl, vec, esize = (int(x) for x in t)
        return {"family": "router", "kind": "row", "config": {"lanes": lanes, "epl": epl, "vec_bytes": vec * esize},
                "variant": {"logits": "f32" if esize == 4 else "16-bit"}}
    if (t := template_args(name, "combine_kernel")):
        tin, tout, th, n, rms = t
        return {"family": "combine", "kind": "gather-reduce",
                "config": {"threads": int(th), "vec": int(n) * ELEM_BYTES.get(tin, 0)},
                "variant": {"dtype": tin, "out": tout, "epilogue": "rms" if bool_arg(rms) else "none"},
                "threads": int(th)}
    for tmpl, order in (("gather_by_token_kernel", "token"), ("gather_kernel", "row")):
        if (t := template_args(name, tmpl)):
            th, vb, un = (int(x) for x in t)
            return {"family": "dispatch", "kind": "gather", "config": {"threads": th, "vec": vb, "unroll": un},
                    "variant": {"order": order}, "threads": th}
    for tmpl, aligner in (("align_single_kernel", "single"), ("align_hist_kernel", "multi"),
                          ("align_scatter_kernel", "multi")):
        if (t := template_args(name, tmpl)):
            return {"family": "dispatch", "kind": "align", "config": {"aligner": aligner, "align_threads": int(t[0])},
                    "variant": {"step": tmpl.split("_")[1]}, "threads": int(t[0])}
    if re.search(r"align_scan_kernel\(", name):
        return {"family": "dispatch", "kind": "align", "config": {"aligner": "multi"}, "variant": {"step": "scan"}}
    # CUTLASS's kernels carry no moebench template, and their names are too deep for c++filt.
    # Each wgmma instantiation is alone in its translation unit, named after its config
    # (wgmma_gemm_<BM>x<BN>x<BK>_<schedule>[_c<CM>x<CN>].cu): the object names the config.
    if "cutlass" in name and (m := re.search(r"wgmma_gemm_(\d+)x(\d+)x(\d+)_(coop|pingpong)(?:_c(\d+)x\d+)?\.cu",
                                              obj or "")):
        cfg = {"kernel": "wgmma", "block_m": int(m[1]), "block_n": int(m[2]), "block_k": int(m[3]),
               "cluster_m": int(m[5] or 1), "schedule": "pingpong" if m[4] == "pingpong" else "cooperative"}
        dyn = next((w["dynamic_smem_bytes"] for w in static.get("wgmma_tiles", [])
                    if all(w[k] == v for k, v in cfg.items() if k != "kernel")), None)
        bf, hf = name.find("bfloat16_t"), name.find("half_t")  # element A comes first
        dtype = "bf16" if bf != -1 and (hf == -1 or bf < hf) else "f16"
        return {"family": "gmm", "kind": "wgmma", "config": cfg, "variant": {"dtype": dtype},
                "dynamic_smem_bytes": dyn, "dynamic_smem_unknown": dyn is None}
    # The wgmma path's own small kernels serve every wgmma config.
    if re.search(r"wgmma_setup_kernel\(", name):
        return {"family": "gmm", "kind": "wgmma-setup", "config": {"kernel": "wgmma"}, "variant": {}}
    if (t := template_args(name, "wgmma_silu_kernel")):
        return {"family": "gmm", "kind": "wgmma-silu", "config": {"kernel": "wgmma"},
                "variant": {"dtype": "bf16" if bool_arg(t[0]) else "f16"}}
    if "moe::gmm" in name or "cutlass" in name:
        return {"family": "gmm", "kind": "wgmma" if "cutlass" in name else "other", "config": None,
                "variant": {}, "dynamic_smem_unknown": True}
    return None


# ---------------------------------------------------------------------------- occupancy

def occupancy(regs, threads, smem):
    warps = math.ceil(threads / 32)
    per_warp = math.ceil(max(regs, 1) * 32 / REG_GRANULE) * REG_GRANULE
    out = {}
    for dev, d in DEVICES.items():
        lim = {
            "registers": (d["regs"] // per_warp) // warps,
            "shared_memory": d["smem"] // (smem + SMEM_RESERVED) if smem <= d["smem_block"] else 0,
            "threads": d["threads"] // (warps * 32),
            "blocks": d["ctas"],
        }
        ctas = min(lim.values())
        out[dev] = {"ctas_per_sm": ctas, "limited_by": min(lim, key=lambda k: (lim[k], k != "registers")),
                    "warps_per_sm": ctas * warps, "limits": lim}
    return out


def occupancy_of(k):
    return occupancy(k["registers"], k["threads"], k["static_smem_bytes"] + k["dynamic_smem_bytes"])


# ---------------------------------------------------------------------------- reading one object

def res_usage(text):
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            cur = m.group(1)
            continue
        if cur and "REG:" in line:
            out[cur] = {k: int(v) for k, v in re.findall(r"(\w+)(?:\[\d+\])?:(\d+)", line)}
            cur = None
    return out


def max_threads(elf_text):
    out, cur = {}, None
    lines = elf_text.splitlines()
    for n, line in enumerate(lines):
        m = re.match(r"^\.nv\.info\.(\S+)$", line.strip())
        if m:
            cur = m.group(1)
        elif cur and "EIATTR_MAX_THREADS" in line or cur and "EIATTR_REQNTID" in line:
            for follow in lines[n + 1:n + 4]:
                v = re.search(r"Value:\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)", follow)
                if v:
                    x, y, z = (int(g, 16) for g in v.groups())
                    out.setdefault(cur, x * y * z)
                    break
    return out


def read_object(obj, tools):
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([tools["cuobjdump"], "-xelf", "all", os.path.abspath(obj)], cwd=tmp,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
        cubins = sorted(f for f in os.listdir(tmp) if f.endswith(".cubin"))
        out = []
        for c in cubins:
            path = os.path.join(tmp, c)
            arch = re.search(r"\.(sm_\w+)\.cubin$", c)
            usage = res_usage(run([tools["cuobjdump"], "-res-usage", path]))
            if not usage:
                continue
            threads = max_threads(run([tools["cuobjdump"], "-elf", path]))
            sass = parse_sass(run([tools["nvdisasm"], "-gi", "-c", path]))
            out.append((arch.group(1) if arch else "?", usage, threads, sass))
        return out


def analyse(objects, tools, static, sources, presets):
    kernels = []
    for obj in objects:
        for arch, usage, threads, sass in read_object(obj, tools):
            names = sorted(usage)
            for mangled, pretty in zip(names, demangle(names)):
                kernels.append(kernel_entry(obj, arch, mangled, stable_name(pretty), usage[mangled],
                                            threads.get(mangled), sass.get(mangled, []), static, sources, presets))
    return kernels


def kernel_entry(obj, arch, mangled, name, use, launch_bound, insns, static, sources, presets):
    ident = identify(name, static, obj)
    family = ident["family"] if ident else None
    threads = (ident or {}).get("threads") or launch_bound or 128
    dyn = (ident or {}).get("dynamic_smem_bytes") or 0
    stl = sum(1 for i in insns if base_op(i["op"]) == "STL")
    ldl = sum(1 for i in insns if base_op(i["op"]) == "LDL")
    e = {
        "name": name,
        "symbol": mangled,
        "object": obj,
        "arch": arch,
        "family": family,
        "kind": (ident or {}).get("kind"),
        "config": (ident or {}).get("config"),
        "variant": (ident or {}).get("variant", {}),
        "mapped": bool(ident and ident.get("config") is not None),
        "registers": use.get("REG", 0),
        "stack_bytes": use.get("STACK", 0),
        "local_bytes": use.get("LOCAL", 0),
        "spill_stores": stl,
        "spill_loads": ldl,
        "static_smem_bytes": use.get("SHARED", 0),
        "dynamic_smem_bytes": dyn,
        # Launched with dynamic shared memory this script has no formula for: occupancy is an upper bound.
        "dynamic_smem_unknown": bool((ident or {}).get("dynamic_smem_unknown")),
        "threads": threads,
        "threads_from": "template" if (ident or {}).get("threads") else ("launch bound" if launch_bound else "assumed"),
        "instructions": sum(1 for i in insns if work(i["op"])),
    }
    e["occupancy"] = occupancy_of(e)
    loops = loops_of(insns)
    if family == "gmm":
        e["k_loop"] = gmm_loop(insns, loops)
    elif family == "router" and ident:
        lanes = ident["config"]["lanes"]
        rr = router_rows(insns, loops, sources, lanes)
        if rr:
            e["row_loop"] = {"instructions": count(insns, rr["row"]["a"], rr["row"]["b"], work),
                             "rows_per_warp": rr["rows_per_warp"],
                             "runtime_loops": sorted(f"{lp['bound'] or '?'}@{lp['where']}" for lp in rr["inner"])}
            e["per_row"] = {}
            for pname, paths in static.get("router", {}).items():
                for path in paths:
                    if matches(ident, path):
                        n, unknown = router_per_row(insns, rr, path, lanes, sources)
                        e["per_row"][pname] = n
                        if unknown:
                            e["unknown_loops"] = sorted(set(unknown))
                        break
    elif family in ("combine",) or (family == "dispatch" and e["kind"] == "gather"):
        e["memory"] = memory_loop(insns, loops)
    return e


def matches(ident, path):
    """Whether a router kernel is the instantiation of a config the C++ space offers."""
    c, esize = ident["config"], 4 if ident["variant"]["logits"] == "f32" else 2
    return (c["lanes"], c["epl"], c["vec_bytes"], esize) == \
        (path["lanes"], path["epl"], path["vec_bytes"], path["logits_bytes"])


# ---------------------------------------------------------------------------- the report

def best_router(kernels, presets):
    best = {}
    for p in presets:
        cands = [(k["per_row"][p], k["name"], k) for k in kernels if p in k.get("per_row", {})]
        if cands:
            n, _, k = min(cands, key=lambda c: (c[0], c[1]))
            best[p] = {"per_row": n, "config": k["config"], "kernel": k["name"]}
    return best


def build_report(build, tools):
    # The kernel library's objects: every family's instantiations (test and timer kernels are not
    # the product's).
    objdir = os.path.join(build, "CMakeFiles", "moe_kernels.dir")
    objects = sorted(os.path.relpath(os.path.join(d, f), build)
                     for d, _, fs in os.walk(objdir) for f in fs if f.endswith(".cu.o"))
    if not objects:
        fail(f"no CUDA objects (*.cu.o) under {objdir}: build first (scripts/setup.sh {build})")
    moebench = tools["moebench"]
    static = json.loads(run([moebench, "kernel-static"])) if moebench else {}
    presets = sorted(static.get("router", {}))
    sources = Sources()
    cwd = os.getcwd()
    os.chdir(build)
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            parts = list(pool.map(lambda o: analyse([o], tools, static, sources, presets), objects))
    finally:
        os.chdir(cwd)
    kernels = sorted((k for part in parts for k in part), key=lambda k: (k["family"] or "~", k["name"]))
    return {
        "schema": SCHEMA,
        "meta": {"tools": tools["versions"], "devices": DEVICES, "register_granule": REG_GRANULE,
                 "smem_reserved_per_cta": SMEM_RESERVED, "dynamic_smem_at": static.get("max_experts"),
                 "presets": presets},
        "kernels": kernels,
        "unmapped": sorted(k["name"] for k in kernels if not k["mapped"]),
        "router_best": best_router(kernels, presets),
    }


def config_str(c):
    return ",".join(f"{k}={v}" for k, v in c.items()) if c else "(unmapped)"


def markdown(rep):
    out = ["# Static kernel report", "",
           "Read from the built cubins (docs/kernel-report.md explains every column). Occupancy is per SM "
           "on H100/H200 (sm_90; identical limits); `bind` is the limit that binds.", ""]
    out += ["| family | variant | config | regs | stack | spill st/ld | smem static+dyn | threads | CTAs/SM (bind) | hot loop |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for k in rep["kernels"]:
        occ = k["occupancy"]["h100"]
        hot = ""
        if k.get("k_loop"):
            l = k["k_loop"]
            hot = f"k-loop {l['instructions']} insn, {l['tensor']} {'/'.join(l['tensor_ops'])}, {l['ldgsts']} LDGSTS, " \
                  f"{l['utmaldg']} UTMALDG, {l['ldsm']} LDSM, {l['non_tensor_per_tensor']} other/tensor"
            if "non_tensor_per_ldgsts" in l:
                hot += f", {l['non_tensor_per_ldgsts']} other/LDGSTS"
        elif k.get("per_row"):
            hot = "per row: " + ", ".join(f"{p} {n}" for p, n in k["per_row"].items())
        elif k.get("row_loop"):
            hot = f"row loop {k['row_loop']['instructions']} insn"
        elif k.get("memory"):
            m = k["memory"]
            hot = f"LDG {m['ldg128']}/{m['ldg']} 128-bit, STG {m['stg128']}/{m['stg']} 128-bit"
            if m.get("loop") and m["loop"]["instructions_per_ldg128"]:
                hot += f", {m['loop']['instructions_per_ldg128']} insn/128-bit load"
        variant = " ".join(str(v) for v in k["variant"].values())
        out.append(f"| {k['family'] or '?'} {k['kind'] or ''} | {variant} | {config_str(k['config'])} | {k['registers']} | "
                   f"{k['stack_bytes']} | {k['spill_stores']}/{k['spill_loads']} | {k['static_smem_bytes']}+{'?' if k.get('dynamic_smem_unknown') else k['dynamic_smem_bytes']} | "
                   f"{k['threads']} | {occ['ctas_per_sm']} ({occ['limited_by']}) | {hot} |")
    if rep.get("router_best"):
        out += ["", "Router, best compiled shape per preset (warp-instructions per row, static upper bound):", "",
                "| preset | per row | config |", "|---|---|---|"]
        for p, b in rep["router_best"].items():
            out.append(f"| {p} | {b['per_row']} | {config_str(b['config'])} |")
    if rep["unmapped"]:
        out += ["", "Kernels with no config mapping:", ""] + [f"- `{n}`" for n in rep["unmapped"]]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- the gate

def check(base, new):
    """Regressions of `new` against `base`, one line each. New kernels are fine; vanished ones are
    noted (a renamed or retired instantiation), never a failure."""
    if base.get("schema") != SCHEMA or new.get("schema") != SCHEMA:
        fail(f"both reports must be {SCHEMA}")
    bad, notes = [], []
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
        for p, n in k.get("per_row", {}).items():
            o = b.get("per_row", {}).get(p)
            if o and n > o * (1 + LOOP_GROWTH):
                bad.append(f"{who}: {p} row {o} -> {n} warp-instructions (> +5%)")
        bm, nm = b.get("memory"), k.get("memory")
        if bm and nm:
            for f, what in (("ldg128", "128-bit loads"), ("stg128", "128-bit stores")):
                if bm[f] > 0 and nm[f] == 0:
                    bad.append(f"{who}: {what} {bm[f]} -> 0")
    for key, b in old.items():
        if key not in seen:
            notes.append(f"not in the new report (retired or renamed): {b['name']}")
    for p, b in base.get("router_best", {}).items():
        n = new.get("router_best", {}).get(p)
        if n and n["per_row"] > b["per_row"] * (1 + LOOP_GROWTH):
            bad.append(f"router best for {p}: {b['per_row']} -> {n['per_row']} warp-instructions per row (> +5%)")
    return bad, notes


# ---------------------------------------------------------------------------- main

def find_tools(args):
    cache = cmake_cache(args.build) if args.build else {}
    cuobjdump = args.cuobjdump or cache.get("MOEBENCH_CUOBJDUMP", "")
    nvdisasm = args.nvdisasm or cache.get("MOEBENCH_NVDISASM", "")
    for what, p in (("cuobjdump", cuobjdump), ("nvdisasm", nvdisasm)):
        if not p or p.endswith("-NOTFOUND") or not os.access(p, os.X_OK):
            fail(f"{what} not found (got '{p}'): run scripts/setup.sh, which unpacks NVIDIA's pinned wheel, "
                 f"or pass --{what} PATH")
    moebench = args.moebench or os.path.join(args.build, "bin", "moebench")
    if not os.access(moebench, os.X_OK):
        fail(f"{moebench} not found: build the project first, or pass --moebench PATH")
    versions = {}
    for what, p in (("cuobjdump", cuobjdump), ("nvdisasm", nvdisasm)):
        v = re.findall(r"V\d+\.\d+\.\d+", run([p, "--version"]))
        versions[what] = v[-1] if v else "?"
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(nvdisasm) + os.pathsep + env.get("PATH", "")
    return {"cuobjdump": cuobjdump, "nvdisasm": nvdisasm, "moebench": os.path.abspath(moebench),
            "versions": versions, "env": env}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"cannot read report {path}: {e}")


def write(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", nargs="?", help="the build folder (holds CMakeFiles/**/*.cu.o and bin/moebench)")
    ap.add_argument("--report", help="gate or print this saved report instead of reading a build")
    ap.add_argument("--json", help="write the report here")
    ap.add_argument("--markdown", help="write the markdown table here ('-': stdout)")
    ap.add_argument("--check", metavar="BASELINE", help="exit 1 when the report regresses against BASELINE")
    ap.add_argument("--update", metavar="BASELINE", help="write the report as the new baseline (a deliberate change)")
    ap.add_argument("--cuobjdump")
    ap.add_argument("--nvdisasm")
    ap.add_argument("--moebench")
    args = ap.parse_args()
    if bool(args.build) == bool(args.report):
        fail("give either a build folder or --report REPORT.json (see --help)")
    if args.report:
        rep = load(args.report)
    else:
        if not os.path.isdir(args.build):
            fail(f"build folder {args.build} does not exist: run scripts/setup.sh {args.build} first")
        rep = build_report(args.build, find_tools(args))
    text = json.dumps(rep, indent=1, sort_keys=False) + "\n"
    if args.json:
        write(args.json, text)
    if args.update:
        write(args.update, text)
        print(f"kernel_report: baseline {args.update} updated ({len(rep['kernels'])} kernels); commit it with the change "
              f"and a line saying why")
    if args.markdown:
        md = markdown(rep)
        if args.markdown == "-":
            sys.stdout.write(md)
        else:
            write(args.markdown, md)
    if args.check:
        bad, notes = check(load(args.check), rep)
        for n in notes:
            print(f"note: {n}")
        if bad:
            for b in bad:
                print(f"REGRESSION: {b}")
            print(f"kernel_report: {len(bad)} regression(s) against {args.check}. If the change is deliberate, run "
                  f"`scripts/kernel_report.py BUILD --update {args.check}` and commit the baseline with a line saying why.")
            return 1
        print(f"kernel_report: {len(rep['kernels'])} kernels, no regression against {args.check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
