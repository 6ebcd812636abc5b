"""Every kernel of a build, read and analysed, as one moebench/kernel-report@1 document."""
import concurrent.futures
import json
import os

from . import SCHEMA
from .configs import identify, matches
from .cubins import read_object
from .fp8_encode import encode_facts, writes_codes
from .w4_decode import w4_facts
from .fp8_wgmma import wgmma_facts
from .hot_loops import first_load, gmm_loop, memory_loop, vector_loop
from .occupancy import DEVICES, REG_GRANULE, SMEM_RESERVED, occupancy_of
from .pdl import early_block, pdl_of
from .router_loops import Sources, router_per_row, router_rows
from .slot_loops import per_slot
from .sass import base_op, count, loops_of, work
from .tools import demangle, fail, run, stable_name


def analyse(objects, tools, static, sources, presets):
    kernels = []
    for obj in objects:
        for arch, usage, threads, sass in read_object(obj, tools):
            names = sorted(usage)
            for mangled, pretty in zip(names, demangle(names)):
                kernels.append(kernel_entry(obj, arch, mangled, stable_name(pretty), usage[mangled],
                                            threads.get(mangled), sass.get(mangled, []), static, sources, presets))
    return kernels


def resource_fields(use):
    """A kernel's figures from cuobjdump -res-usage (cubins.resources)."""
    return {
        "registers": use.get("REG", 0),
        "stack_bytes": use.get("STACK", 0),
        "local_bytes": use.get("LOCAL", 0),
        "static_smem_bytes": use.get("SHARED", 0),
        # cuobjdump 13 counts the driver's 1 KB per CTA in SHARED already: occupancy adds it once.
        "smem_reserved_counted": bool(use.get("reserved_counted")),
    }


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
        **resource_fields(use),
        "spill_stores": stl,
        "spill_loads": ldl,
        "dynamic_smem_bytes": dyn,
        # Launched with dynamic shared memory this script has no formula for: occupancy is an upper bound.
        "dynamic_smem_unknown": bool((ident or {}).get("dynamic_smem_unknown")),
        "threads": threads,
        "threads_from": "template" if (ident or {}).get("threads") else ("launch bound" if launch_bound else "assumed"),
        "instructions": sum(1 for i in insns if work(i["op"])),
    }
    e["occupancy"] = occupancy_of(e)
    e["pdl"] = pdl_of(insns)
    if writes_codes(e):
        e["encode"] = encode_facts(insns)
    loops = loops_of(insns)
    if family == "gmm":
        e["k_loop"] = gmm_loop(insns, loops)
        if e["kind"] == "wgmma":
            e["wgmma_ops"] = wgmma_facts(insns)
        e["first_load_after"] = first_load(insns, early_block(insns))
        if e["kind"] == "mma-w4":
            e["w4"] = w4_facts(insns, loops, e["config"])
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
    elif family == "dispatch" and e["kind"] == "align":
        e["per_slot"] = per_slot(insns, loops, sources)
    elif family in ("combine",) or (family == "dispatch" and e["kind"] == "gather"):
        e["memory"] = memory_loop(insns, loops)
        if family == "combine" or e["variant"].get("order") == "token":
            e["memory"]["slot_loop"] = vector_loop(insns, loops, loads=family == "combine")
    return e



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
        "layer_kernels": static.get("layer_kernels"),
    }
