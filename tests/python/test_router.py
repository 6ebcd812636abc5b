"""moebench.router on numpy arrays (cpu backend) against a numpy reference."""

import numpy as np
import pytest

import moebench
from conftest import cpu_kernel, poisoned, router_reference


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_router_matches_the_reference(rng, dtype):
    T, E, k = 37, 64, 6
    kern = cpu_kernel("router", {"experts": E, "topk": k, "dtype": np.dtype(dtype).name.replace("float", "f")})
    logits = rng.standard_normal((T, E)).astype(dtype)
    weights, ids = poisoned((T, k), np.float32), poisoned((T, k), np.int32)
    moebench.router(kern, logits, None, weights, ids)
    want_w, want_ids = router_reference(logits, k)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(weights, want_w, rtol=1e-5)


def test_router_with_bias_and_shared_experts(rng):
    T, E, k, S = 16, 32, 4, 1
    kern = cpu_kernel("router", {"experts": E, "topk": k, "shared": S, "bias": True})
    logits = rng.standard_normal((T, E)).astype(np.float32)
    bias = (rng.standard_normal(E) * 0.5).astype(np.float32)
    weights, ids = poisoned((T, k + S), np.float32), poisoned((T, k + S), np.int32)
    moebench.router(kern, logits, bias, weights, ids)
    want_w, want_ids = router_reference(logits, k, bias)
    np.testing.assert_array_equal(ids[:, :k], want_ids)
    np.testing.assert_allclose(weights[:, :k], want_w, rtol=1e-5)
    np.testing.assert_array_equal(ids[:, k], E)  # the shared expert's slot, weight 1
    np.testing.assert_array_equal(weights[:, k], 1.0)


def test_kernel_answers_config_describe_and_workspace():
    kern = cpu_kernel("router", {"experts": 16, "topk": 2}, config={"rows_per_task": 4, "select": "heap"})
    assert kern.config(64) == {"rows_per_task": 4, "select": "heap"}
    assert kern.describe(64) == "router at 64 tokens: rows_per_task=4,select=heap (explicit config)"
    assert kern.workspace_bytes(64) == 0
    assert kern.family == "router" and kern.problem["experts"] == 16
    assert kern.outputs(5) == [{"name": "weights", "dtype": "f32", "shape": [5, 2]},
                               {"name": "ids", "dtype": "i32", "shape": [5, 2]}]
