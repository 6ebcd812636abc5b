"""The report as a markdown table (docs/kernel-report.md explains every column)."""
from .configs import config_str
from .layer_kernels import markdown_rows


def pdl_cell(p):
    """`wait@N` (N instructions before griddepcontrol.wait) and `trigger`, or `-` for neither."""
    if not p:
        return "?"
    parts = ([f"wait@{p['before_wait']}"] if p["waits"] else []) + (["trigger"] if p["triggers"] else [])
    return " ".join(parts) or "-"


def markdown(rep):
    out = ["# Static kernel report", "",
           "Read from the built cubins (docs/kernel-report.md explains every column). Occupancy is per SM "
           "on H100/H200 (sm_90; identical limits); `bind` is the limit that binds.", ""]
    out += ["| family | variant | config | regs | stack | spill st/ld | smem static+dyn | threads | CTAs/SM (bind) | PDL | hot loop |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for k in rep["kernels"]:
        occ = k["occupancy"]["h100"]
        hot = ""
        if k.get("k_loop"):
            l = k["k_loop"]
            hot = f"k-loop {l['instructions']} insn, {l['tensor']} {'/'.join(l['tensor_ops'])}, {l['ldgsts']} LDGSTS, " \
                  f"{l['utmaldg']} UTMALDG, {l['ldsm']} LDSM, {l['non_tensor_per_tensor']} other/tensor"
            if "non_tensor_per_ldgsts" in l:
                hot += f", {l['non_tensor_per_ldgsts']} other/LDGSTS"
            if l.get("conversions"):
                hot += f", {l['conversions']} conversions"
            if l.get("ring_loop"):
                hot += f"; ring loop {l['ring_loop']['non_tensor_per_tensor']} other/tensor"
            if k.get("first_load_after") is not None:
                hot += f"; first load after {k['first_load_after']} insn"
        elif k.get("per_row"):
            hot = "per row: " + ", ".join(f"{p} {n}" for p, n in k["per_row"].items())
        elif k.get("row_loop"):
            hot = f"row loop {k['row_loop']['instructions']} insn"
        elif k.get("memory"):
            m = k["memory"]
            hot = f"LDG {m['ldg128']}/{m['ldg']} 128-bit, STG {m['stg128']}/{m['stg']} 128-bit"
            if m.get("loop") and m["loop"]["instructions_per_ldg128"]:
                hot += f", {m['loop']['instructions_per_ldg128']} insn/128-bit load"
            if m.get("slot_loop"):
                hot += f", {m['slot_loop']['per_vector']} insn per 16-byte vector per slot"
        variant = " ".join(str(v) for v in k["variant"].values())
        out.append(f"| {k['family'] or '?'} {k['kind'] or ''} | {variant} | {config_str(k['config'])} | {k['registers']} | "
                   f"{k['stack_bytes']} | {k['spill_stores']}/{k['spill_loads']} | {k['static_smem_bytes']}+{'?' if k.get('dynamic_smem_unknown') else k['dynamic_smem_bytes']} | "
                   f"{k['threads']} | {occ['ctas_per_sm']} ({occ['limited_by']}) | {pdl_cell(k.get('pdl'))} | {hot} |")
    if rep.get("router_best"):
        out += ["", "Router, best compiled shape per preset (warp-instructions per row, static upper bound):", "",
                "| preset | per row | config |", "|---|---|---|"]
        for p, b in rep["router_best"].items():
            out.append(f"| {p} | {b['per_row']} | {config_str(b['config'])} |")
    out += markdown_rows(rep.get("layer_kernels"))
    if rep["unmapped"]:
        out += ["", "Kernels with no config mapping:", ""] + [f"- `{n}`" for n in rep["unmapped"]]
    return "\n".join(out) + "\n"
