"""The gmm family's two stages run by an engine's fused_moe kernel, called as the engine calls it.

moebench's gmm takes rows already dispatched (x_sorted [R,D], each expert's rows contiguous and
padded by `align`, offsets [E+1]); the engine's kernel takes a block map instead: for each slot
of BLOCK_SIZE_M rows the token row it reads (sorted_token_ids, padded with an invalid row per
expert to a multiple of BLOCK_SIZE_M), each block's expert (expert_ids) and the padded total.
That map is what the engine's moe_align_block_size makes; here it is made from `offsets` with
torch ops on the tensors' device, in every call, so a timed call costs what the engine's GEMM
needs. With top_k = 1 and the dispatched rows as tokens, every row is written once (moebench's
padding rows are zero rows: they come out zero).

up: fused_moe_kernel into [R, 2I] (gate | up), then silu(gate) * up in fp32, rounded once (a
small Triton kernel of moebench's: vLLM's silu_and_mul is a CUDA op of its compiled extension).
down: fused_moe_kernel with MUL_ROUTED_WEIGHT and row_weight as the routed weights.
"""

import json

import triton
import triton.language as tl


@triton.jit
def _silu_mul(gu_ptr, h_ptr, rows, inter, stride_gu, stride_h, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = c < inter
    g = tl.load(gu_ptr + r * stride_gu + c, mask=m, other=0.0).to(tl.float32)
    u = tl.load(gu_ptr + r * stride_gu + inter + c, mask=m, other=0.0).to(tl.float32)
    h = g / (1.0 + tl.exp(-g)) * u
    tl.store(h_ptr + r * stride_h + c, h.to(h_ptr.dtype.element_ty), mask=m)


def block_map(offsets, rows, block_m):
    import torch

    offsets = offsets.to(torch.int64)
    experts = offsets.numel() - 1
    counts = offsets[1:] - offsets[:-1]
    padded = (counts + block_m - 1) // block_m * block_m
    ends = torch.cumsum(padded, 0)
    starts = ends - padded
    slots = triton.cdiv(rows + experts * (block_m - 1), block_m) * block_m  # the most any routing needs
    j = torch.arange(slots, device=offsets.device)
    e = torch.searchsorted(ends, j, right=True).clamp(max=experts - 1)
    local = j - starts[e]
    valid = (local < counts[e]) & (j < ends[-1])
    sorted_ids = torch.where(valid, offsets[e] + local, torch.full_like(j, rows)).to(torch.int32)
    first = torch.arange(0, slots, block_m, device=offsets.device)
    expert_ids = torch.searchsorted(ends, first, right=True).clamp(max=experts - 1).to(torch.int32)
    return sorted_ids, expert_ids, ends[-1:].to(torch.int32)


def _compute_type(dtype):
    import torch

    return {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16}[dtype]


def _gemm(loaded, a, b, c, offsets, config, weights=None):
    """c[r] = a[r] @ b[expert(r)]^T (times weights[r]), through the engine's kernel."""
    rows, k = a.shape
    n = b.shape[1]
    bm = int(config["BLOCK_SIZE_M"])
    sorted_ids, expert_ids, post = block_map(offsets, rows, bm)
    em = sorted_ids.numel()
    meta = {key: int(config[key]) for key in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "GROUP_SIZE_M")}
    grid = (triton.cdiv(em, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),)
    if loaded.engine == "sglang" and not loaded.standin:
        _launch_sglang(loaded, grid, a, b, c, weights, sorted_ids, expert_ids, post, n, k, em, rows, config, meta)
        return
    loaded.kernel[grid](
        a, b, c, None, None, None, weights, sorted_ids, expert_ids, post,
        n, k, em, rows,
        a.stride(0), a.stride(1), b.stride(0), b.stride(2), b.stride(1), c.stride(0), c.stride(1),
        0, 0, 0, 0, 0, 0, 0,
        0, 0,
        naive_block_assignment=False,
        BLOCK_SIZE_K=int(config["BLOCK_SIZE_K"]),
        SPLIT_K=1,
        MUL_ROUTED_WEIGHT=weights is not None,
        top_k=1,
        compute_type=_compute_type(a.dtype),
        use_fp8_w8a8=False,
        use_int8_w8a8=False,
        use_int8_w8a16=False,
        per_channel_quant=False,
        HAS_BIAS=False,
        SWAP_AB=False,
        USE_TD=False,
        num_warps=int(config["num_warps"]),
        num_stages=int(config["num_stages"]),
        **meta,
        **loaded.extra,
    )


def _launch_sglang(loaded, grid, a, b, c, weights, sorted_ids, expert_ids, post, n, k, em, rows, config, meta):
    """SGLang's fused_moe_kernel as its invoke_fused_moe_kernel calls it for unquantized weights:
    no tensor descriptors (TMA), no fused SwiGLU, output slices or sums, no PDL launch."""
    loaded.kernel[grid](
        a, None, b, None, None, c, None, None, weights, sorted_ids, expert_ids, post, None,
        n, k, em, rows,
        a.stride(0), a.stride(1), b.stride(0), b.stride(2), b.stride(1),
        0, 0,
        c.stride(0), c.stride(1),
        0, 0, 0, 0, 0,
        0, 0,
        MUL_ROUTED_WEIGHT=weights is not None,
        top_k=1,
        compute_type=_compute_type(a.dtype),
        use_fp8_w8a8=False,
        use_int8_w8a8=False,
        use_int8_w8a16=False,
        per_channel_quant=False,
        even_Ks=k % int(config["BLOCK_SIZE_K"]) == 0,
        c_sorted=False,
        swap_ab=False,
        FUSE_ADD_TO_OUTPUT=False,
        A_OUTPUT_SLICES=1,
        A_OUTPUT_SLICE_WIDTH=0,
        A_OUTPUT_SLICE_K=0,
        MASK_OUTPUT=False,
        FUSE_SUM_ALL_REDUCE=False,
        ROUTER_TOPK=1,
        FUSE_SWIGLU=False,
        BLOCK_SIZE_K=int(config["BLOCK_SIZE_K"]),
        num_warps=int(config["num_warps"]),
        num_stages=int(config["num_stages"]),
        **meta,
    )


def run(loaded, problem_json, config_json, names, tensors, stream, device, ordinal):
    import torch

    problem = json.loads(problem_json)
    config = json.loads(config_json)
    t = {str(name): torch.from_dlpack(x) for name, x in zip(names, tensors)}
    if problem.get("dtype") not in ("bf16", "f16"):
        raise ValueError(f"the engine's fused_moe runs bf16 or f16 here, not {problem.get('dtype')}")
    down = problem.get("stage") == "down"
    # The worker's bench made the tensors on its device; torch's current device may be another.
    on = next(iter(t.values())).device
    ctx = torch.cuda.stream(torch.cuda.ExternalStream(stream, device=on)) if device else _nothing()
    with ctx:
        if down:
            weights = t["row_weight"] if int(problem.get("routed_weight", 0)) else None
            _gemm(loaded, t["h"], t["w2"], t["y_sorted"], t["offsets"], config, weights)
        else:
            x, h = t["x_sorted"], t["h"]
            inter = h.shape[1]
            gate_up = torch.empty((x.shape[0], 2 * inter), dtype=x.dtype, device=x.device)
            _gemm(loaded, x, t["w13"], gate_up, t["offsets"], config)
            block = min(1024, triton.next_power_of_2(inter))
            _silu_mul[(x.shape[0], triton.cdiv(inter, block))](gate_up, h, x.shape[0], inter, gate_up.stride(0), h.stride(0), BLOCK=block)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
