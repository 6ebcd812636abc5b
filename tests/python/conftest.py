"""Shared pieces of the Python tests: random inputs, poisoned outputs, numpy references."""

import numpy as np
import pytest

import moebench

POISON_I32 = np.int32(0x5EADBEEF)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def poisoned(shape, dtype):
    """An output every element of which must be written: NaN for floats, 0x5EADBEEF for int32."""
    dtype = np.dtype(dtype)
    return np.full(shape, POISON_I32 if dtype == np.int32 else np.nan, dtype)


def cpu_kernel(family, problem, **kw):
    return moebench.Kernel(family, problem, backend="cpu", **kw)


def router_reference(logits, k, bias=None, renormalize=True):
    """Softmax top-k (DESIGN.md 1.1, G=1): ids by descending score+bias (ties: lower id), weights
    the softmax scores of the chosen, renormalized."""
    x = logits.astype(np.float64)
    s = np.exp(x - x.max(axis=1, keepdims=True))
    s /= s.sum(axis=1, keepdims=True)
    c = s + (0 if bias is None else bias.astype(np.float64))
    ids = np.argsort(-c, axis=1, kind="stable")[:, :k].astype(np.int32)
    w = np.take_along_axis(s, ids, axis=1)
    if renormalize:
        w /= w.sum(axis=1, keepdims=True)
    return w, ids


def combine_reference(y_sorted, dst, weights):
    """out[t] = sum over slots j with dst >= 0 of weights[t,j] * y_sorted[dst[t*K+j]], in fp64."""
    T, K = weights.shape
    y = y_sorted.astype(np.float64)
    out = np.zeros((T, y.shape[1]))
    for t in range(T):
        for j in range(K):
            r = dst[t * K + j]
            if r >= 0 and weights[t, j] != 0:
                out[t] += weights[t, j] * y[r]
    return out


def layer_reference(logits, x, W13, W2, k, b13=None, b2=None, swiglu_oai=False, alpha=1.702, limit=7.0):
    """The layer in fp64 from dequantized weights: softmax top-k renormalized, then per chosen
    expert silu(gate)*up on split rows, or (swiglu_oai) gpt-oss's clamped SwiGLU on interleaved
    rows (gate, up, gate, ...), with the experts' biases where given."""
    w, ids = router_reference(logits, k)
    I = W13.shape[1] // 2
    out = np.zeros((x.shape[0], W2.shape[1]))
    for t in range(x.shape[0]):
        for j, e in enumerate(ids[t]):
            a = x[t] @ W13[e].T + (0 if b13 is None else b13[e])
            if swiglu_oai:
                gate, up = np.minimum(a[0::2], limit), np.clip(a[1::2], -limit, limit)
                h = (up + 1) * gate / (1 + np.exp(-alpha * gate))
            else:
                h = a[:I] / (1 + np.exp(-a[:I])) * a[I:]
            out[t] += w[t, j] * (h @ W2[e].T + (0 if b2 is None else b2[e]))
    return out
