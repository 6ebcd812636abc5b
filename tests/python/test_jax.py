"""moebench.jax under jax.jit on the cpu backend: bf16 arrays against numpy references."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("jax_tvm_ffi")

import moebench  # noqa: E402
import moebench.jax as mj  # noqa: E402
from conftest import combine_reference, cpu_kernel, layer_reference, router_reference  # noqa: E402


def as_f64(a):
    return np.asarray(a.astype(jnp.float32), np.float64)


def test_jit_combine_bf16(rng):
    T, k, D, R = 9, 2, 64, 40
    kern = cpu_kernel("combine", {"experts": 8, "topk": k, "hidden": D, "dtype": "bf16"})
    y = jnp.asarray(rng.standard_normal((R, D)), jnp.bfloat16)
    dst = rng.permutation(R)[: T * k].astype(np.int32)
    dst[3] = -1  # a slot routed to no local expert
    w = rng.random((T, k)).astype(np.float32)
    out = jax.jit(lambda y, d, w: mj.combine(kern, y, d, w))(y, dst, w)
    assert out.dtype == jnp.bfloat16 and out.shape == (T, D)
    want = combine_reference(as_f64(y), dst, w)
    np.testing.assert_allclose(as_f64(out), want, rtol=1e-2, atol=1e-2)


def test_jit_router_bf16_logits(rng):
    T, E, k = 33, 32, 4
    kern = cpu_kernel("router", {"experts": E, "topk": k, "dtype": "bf16", "bias": 1})
    logits = jnp.asarray(rng.standard_normal((T, E)), jnp.bfloat16)
    bias = (rng.standard_normal(E) * 0.3).astype(np.float32)
    w, ids = jax.jit(lambda l, b: mj.router(kern, l, b))(logits, bias)
    want_w, want_ids = router_reference(as_f64(logits), k, bias)
    np.testing.assert_array_equal(np.asarray(ids), want_ids)
    np.testing.assert_allclose(np.asarray(w), want_w, rtol=1e-5)


def test_jit_gmm_up_takes_tokens_as_an_attribute(rng):
    E, D, I = 2, 32, 16
    kern = cpu_kernel("gmm", {"experts": E, "topk": 1, "hidden": D, "intermediate": I, "dtype": "bf16",
                              "align": 1})
    offsets = np.array([0, 3, 5], np.int32)
    x = jnp.asarray(rng.standard_normal((5, D)), jnp.bfloat16)
    w13 = jnp.asarray(rng.standard_normal((E, 2 * I, D)) * 0.2, jnp.bfloat16)
    h = jax.jit(lambda x, o, w: mj.gmm_up(kern, 5, x, o, w))(x, offsets, w13)
    xs, ws = as_f64(x), as_f64(w13)
    for e in range(E):
        rows = slice(offsets[e], offsets[e + 1])
        a = xs[rows] @ ws[e].T
        want = a[:, :I] / (1 + np.exp(-a[:, :I])) * a[:, I:]
        np.testing.assert_allclose(as_f64(h[rows]), want, rtol=3e-2, atol=3e-2)


def test_a_wrong_dtype_is_a_value_error_at_trace_time(rng):
    kern = cpu_kernel("combine", {"experts": 8, "topk": 2, "hidden": 16, "dtype": "bf16"})
    y = jnp.zeros((4, 16), jnp.float32) + 1
    with pytest.raises(ValueError, match=r"^combine: input 'y_sorted' has dtype f32, expected bf16"):
        jax.jit(lambda y: mj.combine(kern, y, np.zeros(4, np.int32), np.ones((2, 2), np.float32)))(y)


def test_jit_fp8_layer_matches_the_quantized_chain(rng):
    # The fp8 layer (docs/fp8.md) against numpy: x and h quantized per 1x128 group as the design
    # says (scale amax/448, codes e4m3 of value/scale), fp64 products of the dequantized values.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    e4m3 = ml_dtypes.float8_e4m3fn
    T, E, k, D, I = 6, 4, 2, 256, 128
    kern = cpu_kernel("moe-layer", {"experts": E, "topk": k, "hidden": D, "intermediate": I, "dtype": "fp8"})
    logits = jnp.asarray(rng.standard_normal((T, E)), jnp.bfloat16)
    x = jnp.asarray(rng.standard_normal((T, D)) * 3, jnp.bfloat16)
    w13 = (rng.standard_normal((E, 2 * I, D)) * 4).astype(e4m3)
    w2 = (rng.standard_normal((E, D, I)) * 4).astype(e4m3)
    w13_scale = (rng.random((E, 2 * I // 128, D // 128)) + 0.5).astype(np.float32) * 0.02
    w2_scale = (rng.random((E, D // 128, I // 128)) + 0.5).astype(np.float32) * 0.02
    out = jax.jit(lambda *a: mj.moe_layer_fp8(kern, a[0], None, *a[1:]))(
        logits, x, jnp.asarray(w13), w13_scale, jnp.asarray(w2), w2_scale)
    assert out.dtype == jnp.bfloat16 and out.shape == (T, D)

    def quantized(v):  # rows of groups of 128, dequantized
        g = v.reshape(v.shape[0], -1, 128).astype(np.float32)
        s = np.maximum(np.abs(g).max(axis=2, keepdims=True), np.float32(1e-10)) / np.float32(448)
        return ((g / s).astype(e4m3).astype(np.float64) * s).reshape(v.shape)

    def blocks(w, s):  # e4m3 codes times their 128x128 block scales
        return w.astype(np.float64) * np.repeat(np.repeat(s.astype(np.float64), 128, axis=1), 128, axis=2)

    W13, W2, xq = blocks(w13, w13_scale), blocks(w2, w2_scale), quantized(as_f64(x))
    want_w, want_ids = router_reference(as_f64(logits), k)
    want = np.zeros((T, D))
    for t in range(T):
        for j, e in enumerate(want_ids[t]):
            a = xq[t] @ W13[e].T
            h = (a[:I] / (1 + np.exp(-a[:I])) * a[I:]).astype(np.float32)
            want[t] += want_w[t, j] * (quantized(h[None, :])[0] @ W2[e].T)
    rel = np.linalg.norm(as_f64(out) - want) / np.linalg.norm(want)
    assert rel < 1e-2, rel
    # The scales are read: other scales, another output.
    other = jax.jit(lambda *a: mj.moe_layer_fp8(kern, a[0], None, *a[1:]))(
        logits, x, jnp.asarray(w13), w13_scale[:, ::-1].copy(), jnp.asarray(w2), w2_scale)
    assert np.linalg.norm(as_f64(other) - want) / np.linalg.norm(want) > 0.1


@pytest.mark.parametrize("biased", [False, True])
def test_jit_moe_layer_bf16_with_and_without_the_experts_biases(rng, biased):
    T, E, k, D, I = 6, 8, 2, 64, 32
    problem = {"experts": E, "topk": k, "hidden": D, "intermediate": I, "dtype": "bf16"}
    if biased:  # gpt-oss's experts: interleaved rows, clamped SwiGLU, both biases
        problem.update(activation="swiglu_oai", w13_layout="interleaved", w13_block=1, bias13=1, bias2=1)
    kern = cpu_kernel("moe-layer", problem)
    bf16 = lambda shape, scale=1.0: jnp.asarray(rng.standard_normal(shape) * scale, jnp.bfloat16)
    logits, x, w13, w2 = bf16((T, E)), bf16((T, D)), bf16((E, 2 * I, D), 0.2), bf16((E, D, I), 0.2)
    b13, b2 = (bf16((E, 2 * I)), bf16((E, D))) if biased else (None, None)
    out = jax.jit(lambda *a: mj.moe_layer(kern, a[0], None, *a[1:]))(logits, x, w13, w2, b13, b2)
    assert out.dtype == jnp.bfloat16 and out.shape == (T, D)
    f = lambda a: None if a is None else as_f64(a)
    want = layer_reference(as_f64(logits), as_f64(x), as_f64(w13), as_f64(w2), k, f(b13), f(b2), swiglu_oai=biased)
    assert np.linalg.norm(as_f64(out) - want) / np.linalg.norm(want) < 2e-2
