"""Kernels mapped to configs: a kernel's demangled name (and for CUTLASS's kernels, its object)
gives its family and the config parameters the tuner names (`moebench list`)."""
import re


def template_args(name, template):
    m = re.search(r"\b" + re.escape(template) + r"<([^<>]*)>\(", name)
    return [a.strip() for a in m.group(1).split(",")] if m else None


def bool_arg(s):
    return s in ("true", "1")


def epilogue_of(t, i):
    """A gmm kernel's FN template argument (the problem's expert function), absent: plain."""
    return "expert_fn" if len(t) > i and bool_arg(t[i]) else "plain"


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
                "variant": {"stage": "up" if bool_arg(t[6]) else "down", "dtype": "bf16" if bool_arg(t[7]) else "f16",
                            "epilogue": epilogue_of(t, 8)},
                "threads": wm * wn * 32, "dynamic_smem_bytes": dyn}
    if (t := template_args(name, "gmm_fp8_mma_kernel")):
        # fp8's decode kernel: K slices of one 128-wide scale block, one warp row.
        bm, bn, wn, st = (int(x) for x in t[:4])
        cfg = {"block_m": bm, "block_n": bn, "block_k": 128, "warps_m": 1, "warps_n": wn, "stages": st}
        return {"family": "gmm", "kind": "mma-fp8", "config": cfg,
                "variant": {"stage": "up" if bool_arg(t[4]) else "down", "dtype": "fp8"},
                "threads": wn * 32, "dynamic_smem_unknown": True}
    if (t := template_args(name, "gmm_w4_mma_kernel")):
        # The 4-bit decode kernel: one warp row; the format is a template argument.
        bm, bn, bk, wn, st = (int(x) for x in t[:5])
        cfg = {"block_m": bm, "block_n": bn, "block_k": bk, "warps_m": 1, "warps_n": wn, "stages": st}
        return {"family": "gmm", "kind": "mma-w4", "config": cfg,
                "variant": {"stage": "up" if bool_arg(t[5]) else "down", "dtype": "mxfp4" if bool_arg(t[6]) else "int4",
                            "epilogue": epilogue_of(t, 7)},
                "threads": wn * 32, "dynamic_smem_unknown": True}
    if (t := template_args(name, "silu_quant_kernel")):
        # fp8 up's second pass, after the tiles that hold less than a 128-wide group of h.
        return {"family": "gmm", "kind": "fp8-silu-quant", "config": {"block_k": 128, "block_n": 128},
                "variant": {"stage": "up", "dtype": "fp8"}, "threads": int(t[0])}
    if (t := template_args(name, "quant_gather_kernel")):
        return {"family": "dispatch", "kind": "gather", "config": {"threads": int(t[0]), "vec": 16},
                "variant": {"order": "row", "dtype": "fp8"}, "threads": int(t[0])}
    if (t := template_args(name, "gmm_finalize_kernel")):
        return {"family": "gmm", "kind": "finalize", "config": {"split_k": ">1"},
                "variant": {"stage": "up" if bool_arg(t[0]) else "down", "dtype": "bf16" if bool_arg(t[1]) else "f16",
                            "epilogue": epilogue_of(t, 2)}}
    if (t := template_args(name, "gmm_pad_rows_kernel")):
        # Ahead of a biased stage: a warp per activation row flags the all-zero (padding) ones.
        return {"family": "gmm", "kind": "pad-rows", "config": {"warps": int(t[0])}, "variant": {},
                "threads": int(t[0]) * 32}
    if (t := template_args(name, "gmm_schedule_kernel")):
        # The one-CTA kernel writing the mma kernels' tile map; its shared memory is experts+1 ints.
        most = (static.get("max_experts") or {}).get("experts")
        return {"family": "gmm", "kind": "schedule", "config": {"block_m": int(t[0])}, "variant": {},
                "threads": 256, "dynamic_smem_bytes": (most + 1) * 4 if most else None}
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
    if (t := template_args(name, "align_scan_kernel")):
        # The multi-CTA aligner's one-CTA scan: its threads are its own, not align_threads.
        return {"family": "dispatch", "kind": "align", "config": {"aligner": "multi"}, "variant": {"step": "scan"},
                "threads": int(t[0])}
    for tmpl, aligner in (("align_single_kernel", "single"), ("align_hist_kernel", "multi"),
                          ("align_scatter_kernel", "multi")):
        if (t := template_args(name, tmpl)):
            return {"family": "dispatch", "kind": "align", "config": {"aligner": aligner, "align_threads": int(t[0])},
                    "variant": {"step": tmpl.split("_")[1]}, "threads": int(t[0])}
    if (t := template_args(name, "front_kernel")):
        # The layer's decode front (path=decode): the router's row shape it routes with.
        lanes, epl, vec = (int(x) for x in t)
        return {"family": "layer", "kind": "decode-front",
                "config": {"path": "decode", "lanes": lanes, "epl": epl, "vec_bytes": vec * 2},
                "variant": {"logits": "16-bit"}, "threads": 512, "dynamic_smem_unknown": True}
    # CUTLASS's kernels carry no moebench template, and their names are too deep for c++filt.
    # Each wgmma instantiation is alone in its translation unit, named after its config
    # (wgmma_gemm_[fp8_]<BM>x<BN>x<BK>_<schedule>[_c<CM>x<CN>][_down].cu): the object names the
    # config; fp8's _down unit is the bf16-output instantiation down uses.
    if "cutlass" in name and (m := re.search(
            r"wgmma_gemm_(fp8_)?(\d+)x(\d+)x(\d+)_(coop|pingpong)(?:_c(\d+)x(\d+))?(_down)?\.cu", obj or "")):
        fp8, down, m = m[1], m[8], [None] + list(m.groups()[1:])
        cfg = {"kernel": "wgmma", "block_m": int(m[1]), "block_n": int(m[2]), "block_k": int(m[3]),
               "cluster_m": int(m[5] or 1), "cluster_n": int(m[6] or 1),
               "schedule": "pingpong" if m[4] == "pingpong" else "cooperative"}
        dyn = next((w["dynamic_smem_bytes"] for w in static.get("wgmma_tiles", [])
                    if all(w[k] == v for k, v in cfg.items() if k != "kernel")), None)
        bf, hf = name.find("bfloat16_t"), name.find("half_t")  # element A comes first
        dtype = "e4m3" if fp8 else "bf16" if bf != -1 and (hf == -1 or bf < hf) else "f16"
        return {"family": "gmm", "kind": "wgmma", "config": cfg,
                "variant": {"dtype": dtype, "stage": "down"} if down else {"dtype": dtype},
                "dynamic_smem_bytes": dyn, "dynamic_smem_unknown": dyn is None}
    # The wgmma path's own small kernels serve every wgmma config.
    if re.search(r"wgmma_setup_kernel\(", name):
        return {"family": "gmm", "kind": "wgmma-setup", "config": {"kernel": "wgmma"}, "variant": {}}
    if (t := template_args(name, "wgmma_silu_kernel")):
        return {"family": "gmm", "kind": "wgmma-silu", "config": {"kernel": "wgmma"},
                "variant": {"dtype": "bf16" if bool_arg(t[0]) else "f16"}}
    # The library peers' own kernels (kernels/gmm/cublas/): the routed weight on 16-bit rows (cuBLAS's
    # grouped GEMM, and cuBLASLt's bf16 down), fp32 rows rounded to bf16 and cuBLASLt's scale layouts.
    if (t := template_args(name, "scale_rows_kernel")):
        return {"family": "gmm", "kind": "library-epilogue", "config": {"kernel": "cublas"},
                "variant": {"dtype": "bf16" if bool_arg(t[0]) else "f16", "stage": "down"}, "threads": 256}
    if re.search(r"lib::round_rows_kernel\(", name):
        return {"family": "gmm", "kind": "library-epilogue", "config": {"kernel": "cublaslt", "lt_out": "f32"},
                "variant": {"dtype": "fp8", "stage": "down"}, "threads": 256}
    if re.search(r"lib::scale_layout_kernel\(", name):
        return {"family": "gmm", "kind": "library-scales", "config": {"kernel": "cublaslt"},
                "variant": {"dtype": "fp8"}, "threads": 256}
    if "moe::gmm" in name or "cutlass" in name:
        return {"family": "gmm", "kind": "wgmma" if "cutlass" in name else "other", "config": None,
                "variant": {}, "dynamic_smem_unknown": True}
    return None


def matches(ident, path):
    """Whether a router kernel is the instantiation of a config the C++ space offers."""
    c, esize = ident["config"], 4 if ident["variant"]["logits"] == "f32" else 2
    return (c["lanes"], c["epl"], c["vec_bytes"], esize) == \
        (path["lanes"], path["epl"], path["vec_bytes"], path["logits_bytes"])



def config_str(c):
    return ",".join(f"{k}={v}" for k, v in c.items()) if c else "(unmapped)"
