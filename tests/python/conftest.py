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
