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

fp8 (block-scaled W8A8, the engines' use_fp8_w8a8 with block_shape [128, 128]): the kernel reads
the e4m3 operands and their 1x128 / 128x128 scales as moebench lays them out. up writes gate|up
in fp32, not the engine's bf16, and one Triton kernel of moebench's takes silu(gate) * up and
quantizes it per 1x128 group (DESIGN's rule): the engine rounds gate, up and h to bf16 before it
quantizes, which moves h_scale by up to ~3 * 2^-9, past what moebench's h check allows, so a
faithful bf16 chain would be refused by the validation rather than timed. The fp32 write costs
the peer 2x the engine's gate|up bytes: counted against it, and said in docs/migrating.md.
"""

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


@triton.jit
def _e4m3_grid(v):
    """v rounded to the nearest e4m3 value (ties to even) in fp32, so the cast that follows is
    exact: Triton 3.9's interpreter rounds fp32 -> e4m3 wrongly (-127.97 to -64, -336 to -352),
    while a GPU's cvt is right either way. Normals keep 3 mantissa bits of the fp32 bits;
    subnormals (below 2^-6) round at 2^-9 through an fp32 add."""
    b = v.to(tl.int32, bitcast=True)
    normal = ((b + 0x7FFFF + ((b >> 20) & 1)) & -1048576).to(tl.float32, bitcast=True)
    big = tl.where(v < 0, -16384.0, 16384.0)  # its fp32 ulp is 2^-9
    return tl.where(tl.abs(v) < 0.015625, (v + big) - big, normal)


@triton.jit
def _silu_mul_quant(gu_ptr, q_ptr, s_ptr, inter, stride_gu, stride_q, stride_s, UE8M0: tl.constexpr):
    """h = silu(gate) * up in fp32 for one 1x128 group of one row, quantized to e4m3 with its scale."""
    r = tl.program_id(0)
    g0 = tl.program_id(1)
    c = g0 * 128 + tl.arange(0, 128)
    g = tl.load(gu_ptr + r * stride_gu + c).to(tl.float32)
    u = tl.load(gu_ptr + r * stride_gu + inter + c).to(tl.float32)
    h = g / (1.0 + tl.exp(-g)) * u
    _quantize_group(h, q_ptr + r * stride_q + c, s_ptr + r * stride_s + g0, UE8M0)


@triton.jit
def _quantize_group(h, q_ptrs, s_ptr, UE8M0: tl.constexpr):
    """One 1x128 group of fp32 values to e4m3 and its scale (DESIGN's rule)."""
    a = tl.where(h != h, 0.0, tl.abs(h))  # NaN ignored, as fmaxf does
    s = tl.maximum(tl.max(a, axis=0), 1e-10) / 448.0
    if UE8M0:
        # 2^ceil(log2 s) on the bits: a log2 in fp32 rounds s just above a power of two down to it.
        bits = s.to(tl.int32, bitcast=True)
        up = tl.where((bits & 0x7FFFFF) != 0, 1, 0)
        s = ((((bits >> 23) & 0xFF) + up) << 23).to(tl.float32, bitcast=True)
    q = _e4m3_grid(tl.clamp(h / s, -448.0, 448.0))
    q = tl.where(h != h, h, q)
    tl.store(q_ptrs, q.to(q_ptrs.dtype.element_ty))
    tl.store(s_ptr, s)


@triton.jit
def _quantize_rows(x_ptr, q_ptr, s_ptr, stride_x, stride_q, stride_s, UE8M0: tl.constexpr):
    """The activations' 1x128 quantization before up (the engines' per_token_group_quant_fp8)."""
    r = tl.program_id(0)
    g0 = tl.program_id(1)
    c = g0 * 128 + tl.arange(0, 128)
    x = tl.load(x_ptr + r * stride_x + c).to(tl.float32)
    _quantize_group(x, q_ptr + r * stride_q + c, s_ptr + r * stride_s + g0, UE8M0)


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

    return {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16, torch.float32: tl.float32}[dtype]


def _fp8_args(a_scale, b_scale):
    """The kernel's scale arguments: fp8 block scales (stride_asm, stride_ask, stride_bse,
    stride_bsk, stride_bsn; group_n, group_k) or none."""
    if a_scale is None:
        return None, None, (0, 0, 0, 0, 0), (0, 0)
    return a_scale, b_scale, (a_scale.stride(0), a_scale.stride(1), b_scale.stride(0), b_scale.stride(2),
                              b_scale.stride(1)), (128, 128)


def _swap_ab(loaded, a, a_scale, config):
    """Both engines' rule for fp8 on sm_90: narrow M tiles run the kernel's swapped-operand path.
    Under the interpreter (no device to ask) vLLM's kernel takes the Hopper path, so CI runs what
    an H100/H200 runs. SGLang's does not: with BLOCK_SIZE_N <= 128 its swapped path indexes a
    scalar scale as a column (`a_scale[:, None]`), which the interpreter's numpy refuses."""
    if a_scale is None or not (int(config["BLOCK_SIZE_M"]) < 64 and int(config["BLOCK_SIZE_N"]) >= 64):
        return False
    if not a.is_cuda:
        return loaded.engine == "vllm" or loaded.standin
    import torch

    return torch.cuda.get_device_capability(a.device)[0] == 9


def _gemm(loaded, a, b, c, offsets, config, weights=None, a_scale=None, b_scale=None):
    """c[r] = a[r] @ b[expert(r)]^T (times weights[r]) over moebench's dispatched rows."""
    mapped = block_map(offsets, a.shape[0], int(config["BLOCK_SIZE_M"]))
    gemm_mapped(loaded, a, b, c, mapped, a.shape[0], 1, config, weights, a_scale, b_scale)


def gemm_mapped(loaded, a, b, c, mapped, rows, top_k, config, weights=None, a_scale=None, b_scale=None):
    """c[s] = a[s // top_k] @ b[expert(s)]^T (times weights[s]) for the `rows` slots the block map
    `mapped` (sorted_ids, expert_ids, padded total) orders, through the engine's kernel; with
    scales, the e4m3 operands' block-scaled product."""
    k = a.shape[1]
    n = b.shape[1]
    sorted_ids, expert_ids, post = mapped
    em = sorted_ids.numel()
    meta = {key: int(config[key]) for key in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "GROUP_SIZE_M")}
    grid = (triton.cdiv(em, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),)
    scales = _fp8_args(a_scale, b_scale)
    swap = _swap_ab(loaded, a, a_scale, config)
    if loaded.engine == "sglang" and not loaded.standin:
        _launch_sglang(loaded, grid, a, b, c, weights, sorted_ids, expert_ids, post, n, k, em, rows, top_k, config, meta, scales,
                       swap)
        return
    sa, sb, strides, groups = scales
    loaded.kernel[grid](
        a, b, c, None, sa, sb, weights, sorted_ids, expert_ids, post,
        n, k, em, rows,
        a.stride(0), a.stride(1), b.stride(0), b.stride(2), b.stride(1), c.stride(0), c.stride(1),
        *strides, 0, 0,
        *groups,
        naive_block_assignment=False,
        BLOCK_SIZE_K=int(config["BLOCK_SIZE_K"]),
        SPLIT_K=1,
        MUL_ROUTED_WEIGHT=weights is not None,
        top_k=top_k,
        compute_type=_compute_type(c.dtype),
        use_fp8_w8a8=sa is not None,
        use_int8_w8a8=False,
        use_int8_w8a16=False,
        per_channel_quant=False,
        HAS_BIAS=False,
        SWAP_AB=swap,
        USE_TD=False,
        num_warps=int(config["num_warps"]),
        num_stages=int(config["num_stages"]),
        **meta,
        **loaded.extra,
    )


def _launch_sglang(loaded, grid, a, b, c, weights, sorted_ids, expert_ids, post, n, k, em, rows, top_k, config, meta, scales,
                   swap):
    """SGLang's fused_moe_kernel as its invoke_fused_moe_kernel calls it for unquantized or
    block-scaled fp8 weights: no tensor descriptors (TMA), no fused SwiGLU, output slices or
    sums, no PDL launch."""
    sa, sb, strides, groups = scales
    loaded.kernel[grid](
        a, None, b, None, None, c, sa, sb, weights, sorted_ids, expert_ids, post, None,
        n, k, em, rows,
        a.stride(0), a.stride(1), b.stride(0), b.stride(2), b.stride(1),
        0, 0,
        c.stride(0), c.stride(1),
        *strides,
        *groups,
        MUL_ROUTED_WEIGHT=weights is not None,
        top_k=top_k,
        compute_type=_compute_type(c.dtype),
        use_fp8_w8a8=sa is not None,
        use_int8_w8a8=False,
        use_int8_w8a16=False,
        per_channel_quant=False,
        even_Ks=k % int(config["BLOCK_SIZE_K"]) == 0,
        c_sorted=False,
        swap_ab=swap,
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


def run(loaded, problem, config, t):
    """One gmm stage (problem["stage"]: up or down) on the family's tensors t (name -> torch tensor)."""
    import torch

    if problem.get("dtype") not in ("bf16", "f16", "fp8"):
        raise ValueError(f"the engine's fused_moe runs bf16, f16 or fp8 here, not {problem.get('dtype')}")
    down = problem.get("stage") == "down"
    fp8 = problem.get("dtype") == "fp8"
    if down:
        weights = t["row_weight"] if int(problem.get("routed_weight", 0)) else None
        scales = (t["h_scale"], t["w2_scale"]) if fp8 else (None, None)
        _gemm(loaded, t["h"], t["w2"], t["y_sorted"], t["offsets"], config, weights, *scales)
    elif fp8:
        x, h, hs = t["x_sorted"], t["h"], t["h_scale"]
        inter = h.shape[1]
        gate_up = torch.empty((x.shape[0], 2 * inter), dtype=torch.float32, device=x.device)
        _gemm(loaded, x, t["w13"], gate_up, t["offsets"], config, None, t["x_scale"], t["w13_scale"])
        ue8m0 = problem.get("scale_fmt") == "ue8m0"
        _silu_mul_quant[(x.shape[0], inter // 128)](gate_up, h, hs, inter, gate_up.stride(0), h.stride(0), hs.stride(0),
                                                   UE8M0=ue8m0)
    else:
        x, h = t["x_sorted"], t["h"]
        inter = h.shape[1]
        gate_up = torch.empty((x.shape[0], 2 * inter), dtype=x.dtype, device=x.device)
        _gemm(loaded, x, t["w13"], gate_up, t["offsets"], config)
        block = min(1024, triton.next_power_of_2(inter))
        _silu_mul[(x.shape[0], triton.cdiv(inter, block))](gate_up, h, x.shape[0], inter, gate_up.stride(0), h.stride(0), BLOCK=block)
