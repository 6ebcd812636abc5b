"""dispatch -> gmm up -> gmm down -> combine on numpy f16 arrays, each against a numpy reference,
and the whole layer against the stages."""

import numpy as np

import moebench
from conftest import combine_reference, cpu_kernel, poisoned

T, E, k, D, I, A = 12, 4, 2, 32, 16, 4
SHAPE = {"experts": E, "topk": k, "hidden": D, "align": A}


def silu(v):
    return v / (1 + np.exp(-v))


def test_stages_match_numpy(rng):
    x = rng.standard_normal((T, D)).astype(np.float16)
    ids = np.stack([rng.permutation(E)[:k] for _ in range(T)]).astype(np.int32)
    disp = cpu_kernel("dispatch", {**SHAPE, "dtype": "f16"})
    R = disp.max_rows(T)
    assert R == T * k + E * (A - 1)
    offsets, src, dst = poisoned(E + 1, np.int32), poisoned(R, np.int32), poisoned(T * k, np.int32)
    x_sorted = poisoned((R, D), np.float16)
    moebench.dispatch(disp, x, ids, offsets, src, dst, x_sorted)
    used = offsets[-1]
    assert offsets[0] == 0 and np.all(np.diff(offsets) % A == 0)
    for f in range(T * k):  # each slot's row holds its token, inside its expert's segment
        e, r = ids.flat[f], dst[f]
        assert offsets[e] <= r < offsets[e + 1] and src[r] == f
        np.testing.assert_array_equal(x_sorted[r], x[f // k])

    w13 = (rng.standard_normal((E, 2 * I, D)) * 0.2).astype(np.float16)
    up = cpu_kernel("gmm", {**SHAPE, "intermediate": I, "dtype": "f16", "stage": "up"})
    h = poisoned((R, I), np.float16)
    moebench.gmm_up(up, T, x_sorted, offsets, w13, h)
    want_h = np.zeros((R, I))
    for e in range(E):
        rows = slice(offsets[e], offsets[e + 1])
        a = x_sorted[rows].astype(np.float64) @ w13[e].astype(np.float64).T
        want_h[rows] = silu(a[:, :I]) * a[:, I:]
    np.testing.assert_allclose(h[:used].astype(np.float64), want_h[:used], rtol=2e-2, atol=2e-3)

    w2 = (rng.standard_normal((E, D, I)) * 0.2).astype(np.float16)
    down = cpu_kernel("gmm", {**SHAPE, "intermediate": I, "dtype": "f16", "stage": "down"})
    y = poisoned((R, D), np.float16)
    moebench.gmm_down(down, T, h, offsets, w2, None, y)
    want_y = np.zeros((R, D))
    for e in range(E):
        rows = slice(offsets[e], offsets[e + 1])
        want_y[rows] = h[rows].astype(np.float64) @ w2[e].astype(np.float64).T
    np.testing.assert_allclose(y[:used].astype(np.float64), want_y[:used], rtol=2e-2, atol=2e-3)

    comb = cpu_kernel("combine", {**SHAPE, "dtype": "f16"})
    weights = rng.random((T, k)).astype(np.float32)
    out = poisoned((T, D), np.float16)
    moebench.combine(comb, y, dst, weights, out)
    np.testing.assert_allclose(out.astype(np.float64), combine_reference(y, dst, weights), rtol=2e-2, atol=2e-3)


def test_layer_matches_its_stages(rng):
    L = cpu_kernel("moe-layer", {**SHAPE, "intermediate": I, "dtype": "f16"})
    logits = rng.standard_normal((T, E)).astype(np.float16)
    x = rng.standard_normal((T, D)).astype(np.float16)
    w13 = (rng.standard_normal((E, 2 * I, D)) * 0.2).astype(np.float16)
    w2 = (rng.standard_normal((E, D, I)) * 0.2).astype(np.float16)
    ws = np.zeros(max(1, L.workspace_bytes(T)), np.uint8)
    out = poisoned((T, D), np.float16)
    moebench.moe_layer(L, logits, None, x, w13, w2, out, ws)
    # fp64 reference from the router's choice: each token's k experts, weights renormalized.
    s = np.exp(logits.astype(np.float64))
    s /= s.sum(1, keepdims=True)
    want = np.zeros((T, D))
    for t in range(T):
        ids = np.argsort(-s[t], kind="stable")[:k]
        for e in ids:
            a = x[t].astype(np.float64) @ w13[e].astype(np.float64).T
            want[t] += s[t, e] / s[t, ids].sum() * ((silu(a[:I]) * a[I:]) @ w2[e].astype(np.float64).T)
    rel = np.linalg.norm(out.astype(np.float64) - want) / np.linalg.norm(want)
    assert rel < 2e-2, rel
