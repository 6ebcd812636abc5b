"""The moe-layer run as the engines' fused_experts runs it, given moebench's routing.

The tuner's side (kernels/peers/engine.cpp) runs moebench's router first and hands over its ids
and weights [T, K] (K routed slots, then the shared experts' at weight 1). Then, as the engines do:
- the slots t*K + k are ordered by local expert and padded per expert to BLOCK_SIZE_M (the block
  map moe_align_block_size makes, here in torch ops on the tensors' device); slots routed to
  another rank's experts (expert parallelism) go to blocks of expert -1, which the kernel fills
  with zero rows, as vLLM's expert_map does;
- up: the engine's kernel reads each slot's token row of x directly (top_k = K, no gather) into
  gate|up [T*K, 2I]; fp8 quantizes x per 1x128 group first (the engines' per-token-group quant);
- silu(gate) * up: moebench's Triton kernel (the engines' silu_and_mul is a CUDA op of their
  compiled extension), fp8 quantizing h per 1x128 group as gmm.py does;
- down: the engine's kernel with the routed weights (MUL_ROUTED_WEIGHT) into [T*K, D];
- each token's K rows summed into out (the engines' moe_sum; torch.sum here).
One Triton config serves both GEMMs, as in the engines' config files.
"""

import triton

from . import gmm


def align(ids, begin, experts, block_m):
    """(sorted_ids, expert_ids, padded total) for the slots of ids [T, K] on the local experts
    [begin, begin + experts): the kernel's block map, sized for the worst routing so that no
    count comes back to the host."""
    import torch

    slots = ids.numel()
    local = ids.reshape(-1).to(torch.int64) - begin
    local = torch.where((local >= 0) & (local < experts), local, torch.full_like(local, experts))
    counts = torch.bincount(local, minlength=experts + 1)
    padded = (counts + block_m - 1) // block_m * block_m
    ends = torch.cumsum(padded, 0)
    order = torch.argsort(local, stable=True)
    first = torch.cumsum(counts, 0) - counts
    grouped = local[order]
    where = ends[grouped] - padded[grouped] + torch.arange(slots, device=ids.device) - first[grouped]
    size = triton.cdiv(slots + (experts + 1) * (block_m - 1), block_m) * block_m
    sorted_ids = torch.full((size,), slots, dtype=torch.int32, device=ids.device)
    sorted_ids[where] = order.to(torch.int32)
    block_expert = torch.searchsorted(ends, torch.arange(0, size, block_m, device=ids.device), right=True)
    expert_ids = torch.where(block_expert >= experts, -1, block_expert).to(torch.int32)
    return sorted_ids, expert_ids, ends[-1:].to(torch.int32)


def run(loaded, problem, config, t):
    import torch

    x, w13, w2, ids, out = t["x"], t["w13"], t["w2"], t["ids"], t["out"]
    tokens, k = ids.shape
    slots = tokens * k
    inter, hidden = w2.shape[2], x.shape[1]
    fp8 = problem.get("dtype") == "fp8"
    ue8m0 = problem.get("scale_fmt") == "ue8m0"
    mapped = align(ids, int(problem.get("expert_begin", 0)), w13.shape[0], int(config["BLOCK_SIZE_M"]))
    weights = t["weights"].reshape(-1)
    if fp8:
        xq = torch.empty(x.shape, dtype=torch.float8_e4m3fn, device=x.device)
        xs = torch.empty((tokens, hidden // 128), dtype=torch.float32, device=x.device)
        gmm._quantize_rows[(tokens, hidden // 128)](x, xq, xs, x.stride(0), xq.stride(0), xs.stride(0), UE8M0=ue8m0)
        gate_up = torch.empty((slots, 2 * inter), dtype=torch.float32, device=x.device)
        gmm.gemm_mapped(loaded, xq, w13, gate_up, mapped, slots, k, config, None, xs, t["w13_scale"])
        h = torch.empty((slots, inter), dtype=torch.float8_e4m3fn, device=x.device)
        hs = torch.empty((slots, inter // 128), dtype=torch.float32, device=x.device)
        gmm._silu_mul_quant[(slots, inter // 128)](gate_up, h, hs, inter, gate_up.stride(0), h.stride(0), hs.stride(0),
                                                  UE8M0=ue8m0)
        scales = (hs, t["w2_scale"])
    else:
        gate_up = torch.empty((slots, 2 * inter), dtype=x.dtype, device=x.device)
        gmm.gemm_mapped(loaded, x, w13, gate_up, mapped, slots, k, config)
        h = torch.empty((slots, inter), dtype=x.dtype, device=x.device)
        block = min(1024, triton.next_power_of_2(inter))
        gmm._silu_mul[(slots, triton.cdiv(inter, block))](gate_up, h, slots, inter, gate_up.stride(0), h.stride(0),
                                                         BLOCK=block)
        scales = (None, None)
    y = torch.empty((slots, hidden), dtype=out.dtype, device=x.device)
    gmm.gemm_mapped(loaded, h, w2, y, mapped, slots, 1, config, weights, *scales)
    torch.sum(y.view(tokens, k, hidden), dim=1, out=out)
