"""moebench.torch's custom ops on cpu tensors; skipped where torch is not installed (it is no test
dependency: a PyPI torch wheel pulls in the CUDA packages)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import moebench.torch as mt  # noqa: E402
from conftest import combine_reference, cpu_kernel, router_reference  # noqa: E402


def test_router_op_writes_its_outputs(rng):
    T, E, k = 20, 32, 4
    kern = cpu_kernel("router", {"experts": E, "topk": k})
    logits = torch.from_numpy(rng.standard_normal((T, E)).astype(np.float32))
    w, ids = torch.full((T, k), float("nan")), torch.full((T, k), -7, dtype=torch.int32)
    mt.router(kern, logits, None, w, ids)
    want_w, want_ids = router_reference(logits.numpy(), k)
    np.testing.assert_array_equal(ids.numpy(), want_ids)
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-5)


def test_combine_under_torch_compile(rng):
    T, k, D, R = 6, 2, 16, 16
    kern = cpu_kernel("combine", {"experts": 4, "topk": k, "hidden": D, "dtype": "f32"})
    y = torch.from_numpy(rng.standard_normal((R, D)).astype(np.float32))
    dst = torch.from_numpy(rng.permutation(R)[: T * k].astype(np.int32))
    w = torch.from_numpy(rng.random((T, k)).astype(np.float32))

    @torch.compile(fullgraph=True)
    def step(y, dst, w):
        out = torch.empty((T, D))
        mt.combine(kern, y, dst, w, out)
        return out * 2

    got = step(y, dst, w)
    np.testing.assert_allclose(got.numpy(), 2 * combine_reference(y.numpy(), dst.numpy(), w.numpy()), rtol=1e-5)
