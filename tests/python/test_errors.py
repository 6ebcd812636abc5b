"""Every way a call can be wrong is an exception of the right kind with the CLI's words; nothing
runs and outputs stay untouched."""

import numpy as np
import pytest

import moebench
from conftest import cpu_kernel, poisoned

T, E, k = 8, 16, 4


@pytest.fixture
def router():
    return cpu_kernel("router", {"experts": E, "topk": k})


@pytest.fixture
def args(rng):
    return (rng.standard_normal((T, E)).astype(np.float32), None, poisoned((T, k), np.float32),
            poisoned((T, k), np.int32))


def refused(exc, match, fn, *a, **kw):
    with pytest.raises(exc, match=match):
        fn(*a, **kw)


def test_uint16_is_refused_not_taken_as_bf16(router, args):
    logits, bias, w, ids = args
    refused(ValueError, r"^router: tensor 'logits' has dtype uint16, which moebench does not take",
            moebench.router, router, logits.view(np.uint16)[:, ::2].copy(), bias, w, ids)
    assert np.isnan(w).all()


def test_wrong_shape_and_dtype_say_what_the_cli_says(router, args):
    logits, bias, w, ids = args
    refused(ValueError, r"^router: input 'logits' has shape \[8, 15\], expected \[8, 16\] \(-1: any\)$",
            moebench.router, router, logits[:, :15].copy(), bias, w, ids)
    refused(ValueError, r"^router: input 'logits' has dtype f16, expected f32$",
            moebench.router, router, logits.astype(np.float16), bias, w, ids)
    refused(ValueError, r"^router: output 'ids' has dtype f32, expected i32$",
            moebench.router, router, logits, bias, w, w.copy())
    refused(ValueError, r"^router: output 'weights' has shape \[8, 3\]",
            moebench.router, router, logits, bias, w[:, :3].copy(), ids)
    refused(ValueError, r"not contiguous", moebench.router, router, np.asfortranarray(logits), bias, w, ids)
    refused(ValueError, r"token \(row\) dimension", moebench.router, router, np.array(1.0, np.float32), bias, w, ids)
    refused(TypeError, r"DLTensor", moebench.router, router, [[1.0]], bias, w, ids)
    assert np.isnan(w).all()


def test_optional_tensors_follow_the_problem(router, args):
    logits, bias, w, ids = args
    refused(ValueError, r"^router: input 'bias' is given but the problem .* takes none",
            moebench.router, router, logits, np.zeros(E, np.float32) + 0.5, w, ids)
    with_bias = cpu_kernel("router", {"experts": E, "topk": k, "bias": 1})
    refused(ValueError, r"^router: input 'bias' is missing$", moebench.router, with_bias, logits, None, w, ids)


def test_bad_problems_and_handles():
    refused(ValueError, r"topk \(40\) must be between 1 and the 16 experts", cpu_kernel, "router",
            {"experts": 16, "topk": 40})
    refused(ValueError, r"unknown", cpu_kernel, "nosuch", {})
    refused(ValueError, r"unknown backend 'tpu'", moebench.Kernel, "router", {}, "tpu")
    refused(ValueError, r"tokens", cpu_kernel, "router", {"tokens": 4})
    refused(ValueError, r"experts", cpu_kernel, "router", {"experts": "many"})
    refused(ValueError, r"rows_per_task", cpu_kernel, "router", {}, config={"rows_per_task": 0})
    refused(TypeError, r"problem must be a dict", cpu_kernel, "router", [("experts", 8)])
    refused(TypeError, r"expected a moebench.Kernel", moebench.router, "router", None, None, None, None)


def test_cuda_without_a_gpu_is_a_clear_error():
    with pytest.raises(ValueError, match="CUDA|cuda|GPU|device"):
        moebench.Kernel("router", {"experts": 16, "topk": 2}, backend="cuda")


def test_combine_refuses_a_dst_past_y_sorted(rng):
    comb = cpu_kernel("combine", {"experts": 4, "topk": 2, "hidden": 8, "dtype": "f32"})
    y = rng.standard_normal((6, 8)).astype(np.float32)
    dst = np.array([0, 1, 2, 3, 4, 5, -1, 6], np.int32)
    out = poisoned((4, 8), np.float32)
    refused(ValueError, r"^combine: dst\[7\] = 6 is no row of the 6 in y_sorted", moebench.combine, comb, y, dst,
            rng.random((4, 2)).astype(np.float32), out)
    assert np.isnan(out).all()


def test_gmm_refuses_offsets_past_its_rows(rng):
    up = cpu_kernel("gmm", {"experts": 2, "topk": 1, "hidden": 16, "intermediate": 8, "dtype": "f16", "align": 1})
    x = rng.standard_normal((4, 16)).astype(np.float16)
    w13 = rng.standard_normal((2, 16, 16)).astype(np.float16)
    h = poisoned((4, 8), np.float16)
    refused(ValueError, r"^gmm: offsets must rise from 0 to at most the 4 rows", moebench.gmm_up, up, 4, x,
            np.array([0, 3, 9], np.int32), w13, h)
    refused(ValueError, r"^gmm: offsets must rise", moebench.gmm_up, up, 4, x, np.array([0, 3, 2], np.int32), w13, h)
    refused(ValueError, r"^gmm: output 'h' has shape \[3, 8\]", moebench.gmm_up, up, 4, x,
            np.array([0, 2, 4], np.int32), w13, h[:3].copy())
    assert np.isnan(h.astype(np.float32)).all()


def test_dispatch_needs_room_for_every_routing(rng):
    disp = cpu_kernel("dispatch", {"experts": 4, "topk": 2, "hidden": 8, "dtype": "f32", "align": 4})
    x = rng.standard_normal((3, 8)).astype(np.float32)
    ids = np.array([[0, 1], [2, 3], [1, 0]], np.int32)
    R = disp.max_rows(3)
    refused(ValueError, r"^dispatch: output 'x_sorted' has shape \[6, 8\], expected \[%d, 8\]" % R, moebench.dispatch,
            disp, x, ids, poisoned(5, np.int32), poisoned(R, np.int32), poisoned(6, np.int32),
            poisoned((6, 8), np.float32))
    refused(ValueError, r"dispatch needs a Kernel of the dispatch family",
            cpu_kernel("router", {"experts": 4, "topk": 2}).max_rows, 3)


def test_the_bf16_and_fp8_examples_of_the_docs_run():
    # docs/python.md's examples of passing ml_dtypes arrays, run as written: the torch one where
    # torch is installed.
    import importlib.util
    import re
    from pathlib import Path

    for m in ("ml_dtypes", "jax", "jax_tvm_ffi"):
        if importlib.util.find_spec(m) is None:
            pytest.skip(f"{m} is not importable")
    doc = (Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text()
    section = doc[doc.index("## bf16 and fp8 from numpy"):]
    section = section[: section.index("\n## ", 3)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    scope = {}
    exec(blocks[0], scope)
    assert scope["out"].dtype.name == "bfloat16" and scope["out"].shape == (9, 64)
    assert np.isfinite(scope["out"].astype(np.float32)).all()
    jax_out = scope["out"].astype(np.float32)
    if importlib.util.find_spec("torch") is not None:
        exec(blocks[1], scope)
        np.testing.assert_array_equal(scope["out"].astype(np.float32), jax_out)
