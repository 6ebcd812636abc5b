"""moebench.torch's custom ops on cpu tensors. scripts/setup.sh brings torch into the deps folder,
so these run in CI; they skip only where someone runs the tests without it."""

import os
import subprocess
import sys
import textwrap

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


def test_the_first_call_may_be_inside_torch_compile():
    """A fresh process whose first moebench.torch call is traced by torch.compile(fullgraph=True):
    the ops register at trace time and the Kernel is found by its id on the graph's first run.
    (In this process earlier tests have registered the ops already, hence the subprocess.)"""
    script = textwrap.dedent("""
        import numpy as np
        import moebench, moebench.torch as mt
        import torch
        T, k, D, R = 5, 3, 8, 20
        rng = np.random.default_rng(7)
        kern = moebench.Kernel("combine", {"experts": 4, "topk": k, "hidden": D, "dtype": "f32"}, backend="cpu")
        y = torch.from_numpy(rng.standard_normal((R, D)).astype(np.float32))
        dst = torch.from_numpy(rng.permutation(R)[: T * k].astype(np.int32))
        w = torch.from_numpy(rng.random((T, k)).astype(np.float32))

        @torch.compile(fullgraph=True)
        def step(y, dst, w):
            out = torch.full((T, D), float("nan"))
            mt.combine(kern, y, dst, w, out)
            return out - 1

        got = step(y, dst, w).numpy() + 1
        want = (y.numpy()[dst.numpy().reshape(T, k)] * w.numpy()[:, :, None]).sum(axis=1)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


def test_the_trace_time_marker_is_torchs():
    """moebench.torch marks its registration as torch.compiler.assume_constant_result would, without
    importing torch; a torch that marks differently fails here rather than under compile."""
    marked = torch.compiler.assume_constant_result(lambda: True)
    ours = mt._constant_at_trace_time(lambda: True)
    assert [a for a in vars(marked)] == [a for a in vars(ours)] == ["_dynamo_marked_constant"]
