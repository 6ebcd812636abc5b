"""The layer with 4-bit weights (docs/w4.md) from torch, the tensors as checkpoints store them:
mxfp4 uint8 e2m1 pairs with uint8 e8m0 scales (gpt-oss), int4 int32 words with bf16 scales and
int32 zero points (compressed-tensors pack-quantized), against a numpy dequantization written here."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import moebench  # noqa: E402
import moebench.torch as mt  # noqa: E402
from conftest import cpu_kernel, layer_reference  # noqa: E402

T, E, k, D, I = 5, 4, 2, 64, 32
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def f64(t):
    return t.to(torch.float32).numpy().astype(np.float64)


def mxfp4(rng, n, kdim):
    codes = rng.integers(0, 256, (E, n, kdim // 2), dtype=np.uint8)
    scales = rng.integers(120, 128, (E, n, kdim // 32), dtype=np.uint8)
    lo, hi = E2M1[codes & 15], E2M1[codes >> 4]
    vals = np.stack([lo, hi], axis=-1).reshape(E, n, kdim)  # the even K element in the low nibble
    return torch.from_numpy(codes), torch.from_numpy(scales), vals * np.exp2(np.repeat(scales.astype(np.float64) - 127, 32, axis=2))


def int4(rng, n, kdim, group, zero_point):
    q = rng.integers(0, 16, (E, n, kdim))
    words = np.zeros((E, n, kdim // 8), np.uint32)
    for j in range(8):  # eight codes a word along K, the first in the lowest bits
        words |= q[:, :, j::8].astype(np.uint32) << np.uint32(4 * j)
    scale = torch.from_numpy(rng.random((E, n, kdim // group)).astype(np.float32) * 0.05 + 0.01).to(torch.bfloat16)
    z = rng.integers(0, 16, (E, n, kdim // group)) if zero_point else np.full((E, n, kdim // group), 8)
    zwords = np.zeros((E, n // 8, kdim // group), np.uint32)
    for j in range(8):  # eight weight rows a word
        zwords |= z[:, j::8, :].astype(np.uint32) << np.uint32(4 * j)
    vals = (q - np.repeat(z, group, axis=2)) * np.repeat(f64(scale), group, axis=2)
    zt = torch.from_numpy(zwords.view(np.int32)) if zero_point else None
    return torch.from_numpy(words.view(np.int32)), scale, zt, vals


@pytest.mark.parametrize("dtype,group,zero_point", [("mxfp4", 32, 0), ("int4", 32, 0), ("int4", 32, 1)])
def test_w4_layer_takes_the_checkpoint_tensors(rng, dtype, group, zero_point):
    problem = {"experts": E, "topk": k, "hidden": D, "intermediate": I, "dtype": dtype, "align": 1}
    if dtype == "int4":
        problem.update(group=group, zero_point=zero_point)
    kern = cpu_kernel("moe-layer", problem)
    logits = torch.from_numpy(rng.standard_normal((T, E)).astype(np.float32)).to(torch.bfloat16)
    x = torch.from_numpy(rng.standard_normal((T, D)).astype(np.float32)).to(torch.bfloat16)
    if dtype == "mxfp4":
        w13, s13, W13 = mxfp4(rng, 2 * I, D)
        w2, s2, W2 = mxfp4(rng, D, I)
        z13 = z2 = None
    else:
        w13, s13, z13, W13 = int4(rng, 2 * I, D, group, zero_point)
        w2, s2, z2, W2 = int4(rng, D, I, group, zero_point)
    ws = torch.zeros(max(1, kern.workspace_bytes(T)), dtype=torch.uint8)
    out = torch.full((T, D), float("nan"), dtype=torch.bfloat16)
    mt.moe_layer_w4(kern, logits, None, x, w13, s13, w2, s2, out, ws, z13, z2)
    want = layer_reference(f64(logits), f64(x), W13, W2, k)
    rel = np.linalg.norm(f64(out) - want) / np.linalg.norm(want)
    assert rel < 2e-2, rel
    # The eager module takes the same tensors; the scales are read: other scales, another output.
    other = torch.full((T, D), float("nan"), dtype=torch.bfloat16)
    moebench.moe_layer_w4(kern, logits, None, x, w13, s13.flip(1).contiguous(), w2, s2, other, ws, z13, z2)
    assert np.linalg.norm(f64(other) - want) / np.linalg.norm(want) > 0.1


def test_w4_layer_refuses_what_the_problem_does_not_take(rng):
    kern = cpu_kernel("moe-layer", {"experts": E, "topk": k, "hidden": D, "intermediate": I, "dtype": "int4", "group": 32})
    w13, s13, _, _ = int4(rng, 2 * I, D, 32, False)
    w2, s2, _, _ = int4(rng, D, I, 32, False)
    z = torch.zeros((E, 2 * I // 8, D // 32), dtype=torch.int32)
    x = torch.zeros((T, D), dtype=torch.bfloat16)
    out = torch.empty((T, D), dtype=torch.bfloat16)
    ws = torch.zeros(max(1, kern.workspace_bytes(T)), dtype=torch.uint8)
    with pytest.raises(ValueError, match="input 'w13_zero' is given but the problem"):
        moebench.moe_layer_w4(kern, torch.zeros((T, E), dtype=torch.bfloat16), None, x, w13, s13, w2, s2, out, ws, z, None)
    with pytest.raises(ValueError, match="w13"):
        moebench.moe_layer_w4(kern, torch.zeros((T, E), dtype=torch.bfloat16), None, x, w13.to(torch.float32), s13, w2, s2,
                              out, ws)


def gpt_oss_problem(dtype):
    return {"experts": E, "topk": k, "hidden": D, "intermediate": I, "dtype": dtype, "align": 1,
            "activation": "swiglu_oai", "alpha": 1.702, "limit": 7.0, "w13_layout": "interleaved", "w13_block": 1,
            "bias13": 1, "bias2": 1}


def bf16_randn(rng, shape, scale=1.0):
    return torch.from_numpy((rng.standard_normal(shape) * scale).astype(np.float32)).to(torch.bfloat16)


def test_gpt_oss_layer_takes_its_checkpoint_tensors_and_biases(rng):
    kern = cpu_kernel("moe-layer", gpt_oss_problem("mxfp4"))
    logits, x = bf16_randn(rng, (T, E)), bf16_randn(rng, (T, D))
    w13, s13, W13 = mxfp4(rng, 2 * I, D)  # rows in the checkpoint's order: gate, up, gate, up, ...
    w2, s2, W2 = mxfp4(rng, D, I)
    # bias2 on the scale of these weights' outputs (hundreds), so that another one shows.
    b13, b2 = bf16_randn(rng, (E, 2 * I), 2.0), bf16_randn(rng, (E, D), 100.0)
    ws = torch.zeros(max(1, kern.workspace_bytes(T)), dtype=torch.uint8)
    out = torch.full((T, D), float("nan"), dtype=torch.bfloat16)
    mt.moe_layer_w4(kern, logits, None, x, w13, s13, w2, s2, out, ws, bias13=b13, bias2=b2)
    want = layer_reference(f64(logits), f64(x), W13, W2, k, f64(b13), f64(b2), swiglu_oai=True)
    assert np.linalg.norm(f64(out) - want) / np.linalg.norm(want) < 2e-2
    # Both biases are read: without bias2's rows (another bias2) the output moves.
    other = torch.full((T, D), float("nan"), dtype=torch.bfloat16)
    moebench.moe_layer_w4(kern, logits, None, x, w13, s13, w2, s2, other, ws, bias13=b13, bias2=b2.flip(0).contiguous())
    assert np.linalg.norm(f64(other) - want) / np.linalg.norm(want) > 0.05


def test_bf16_layer_takes_the_experts_biases(rng):
    kern = cpu_kernel("moe-layer", gpt_oss_problem("bf16"))
    logits, x = bf16_randn(rng, (T, E)), bf16_randn(rng, (T, D))
    w13, w2 = bf16_randn(rng, (E, 2 * I, D), 0.1), bf16_randn(rng, (E, D, I), 0.1)
    b13, b2 = bf16_randn(rng, (E, 2 * I), 2.0), bf16_randn(rng, (E, D))
    ws = torch.zeros(max(1, kern.workspace_bytes(T)), dtype=torch.uint8)
    out = torch.full((T, D), float("nan"), dtype=torch.bfloat16)
    mt.moe_layer(kern, logits, None, x, w13, w2, out, ws, bias13=b13, bias2=b2)
    want = layer_reference(f64(logits), f64(x), f64(w13), f64(w2), k, f64(b13), f64(b2), swiglu_oai=True)
    assert np.linalg.norm(f64(out) - want) / np.linalg.norm(want) < 2e-2


def test_layer_biases_are_refused_or_required_by_the_problem(rng):
    plain = cpu_kernel("moe-layer", {"experts": E, "topk": k, "hidden": D, "intermediate": I, "dtype": "bf16"})
    biased = cpu_kernel("moe-layer", gpt_oss_problem("bf16"))
    logits, x = bf16_randn(rng, (T, E)), bf16_randn(rng, (T, D))
    w13, w2 = bf16_randn(rng, (E, 2 * I, D)), bf16_randn(rng, (E, D, I))
    b13, b2 = bf16_randn(rng, (E, 2 * I)), bf16_randn(rng, (E, D))
    out = torch.empty((T, D), dtype=torch.bfloat16)
    ws = torch.zeros(max(1, plain.workspace_bytes(T), biased.workspace_bytes(T)), dtype=torch.uint8)
    with pytest.raises(ValueError, match="input 'bias13' is given but the problem"):
        moebench.moe_layer(plain, logits, None, x, w13, w2, out, ws, bias13=b13)
    with pytest.raises(ValueError, match="bias2"):
        moebench.moe_layer(biased, logits, None, x, w13, w2, out, ws, bias13=b13)
