"""moebench's stand-in for an engine's Triton fused_moe kernel, for machines without the engine's
package (MOEBENCH_PEERS_KERNEL=standin): written for moebench, with the calling convention of
vLLM's fused_moe_kernel (the same arguments in the same order, the same config keys), so the
worker drives it exactly as it drives the engine's. Unquantized weights only: the quantization
arguments are taken and must be off.

BROKEN_K (tests only, MOEBENCH_PEERS_KERNEL=standin-broken): a config whose BLOCK_SIZE_K equals it
skips the last K step, a wrong kernel variant that the validation gate must refuse.
"""

import triton
import triton.language as tl


@triton.jit
def fused_moe_kernel(
    a_ptr, b_ptr, c_ptr, b_bias_ptr, a_scale_ptr, b_scale_ptr, topk_weights_ptr,
    sorted_token_ids_ptr, expert_ids_ptr, num_tokens_post_padded_ptr,
    N, K, EM, num_valid_tokens,
    stride_am, stride_ak, stride_be, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_asm, stride_ask, stride_bse, stride_bsk, stride_bsn, stride_bbe, stride_bbn,
    group_n: tl.constexpr, group_k: tl.constexpr, naive_block_assignment: tl.constexpr,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, SPLIT_K: tl.constexpr, MUL_ROUTED_WEIGHT: tl.constexpr,
    top_k: tl.constexpr, compute_type: tl.constexpr,
    use_fp8_w8a8: tl.constexpr, use_int8_w8a8: tl.constexpr, use_int8_w8a16: tl.constexpr,
    per_channel_quant: tl.constexpr, HAS_BIAS: tl.constexpr, SWAP_AB: tl.constexpr,
    USE_TD: tl.constexpr = False, BROKEN_K: tl.constexpr = 0,
):
    tl.static_assert(not (use_fp8_w8a8 or use_int8_w8a8 or use_int8_w8a16), "stand-in: unquantized only")
    # Programs walk GROUP_SIZE_M row tiles down one column of tiles before the next column.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(EM, BLOCK_SIZE_M)
    tiles_n = tl.cdiv(N, BLOCK_SIZE_N)
    per_group = GROUP_SIZE_M * tiles_n
    first_m = (pid // per_group) * GROUP_SIZE_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_SIZE_M)
    tile_m = first_m + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group
    if tile_m * BLOCK_SIZE_M >= tl.load(num_tokens_post_padded_ptr):
        return
    slot = tile_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    row = tl.load(sorted_token_ids_ptr + slot).to(tl.int64)
    live = row < num_valid_tokens
    expert = tl.load(expert_ids_ptr + tile_m).to(tl.int64)
    col = tile_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    if expert == -1:  # slots of another rank's experts: zero rows, as the engines write them
        tl.store(c_ptr + row[:, None] * stride_cm + col[None, :] * stride_cn,
                 tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=compute_type), mask=live[:, None] & (col[None, :] < N))
        return
    kk = tl.arange(0, BLOCK_SIZE_K)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    steps = tl.cdiv(K, BLOCK_SIZE_K)
    if BROKEN_K == BLOCK_SIZE_K:
        steps = steps - 1
    for step in range(0, steps):
        k0 = step * BLOCK_SIZE_K
        a = tl.load(a_ptr + (row // top_k)[:, None] * stride_am + (k0 + kk)[None, :] * stride_ak,
                    mask=live[:, None] & ((k0 + kk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + expert * stride_be + (k0 + kk)[:, None] * stride_bk + col[None, :] * stride_bn,
                    mask=((k0 + kk)[:, None] < K) & (col[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    if MUL_ROUTED_WEIGHT:
        acc *= tl.load(topk_weights_ptr + row, mask=live, other=0.0)[:, None]
    tl.store(c_ptr + row[:, None] * stride_cm + col[None, :] * stride_cn, acc.to(compute_type),
             mask=live[:, None] & (col[None, :] < N))
