"""What a call may write: outputs must be writable and must share no memory with an input or
another output. A refused call is a ValueError naming the argument and leaves every buffer as it
was; read-only inputs (a memory-mapped weight file) are read as any others."""

import sys

import numpy as np
import pytest

import moebench
from conftest import combine_reference, cpu_kernel, poisoned

T, K, D, R = 4, 2, 8, 10


@pytest.fixture
def comb():
    return cpu_kernel("combine", {"experts": 4, "topk": K, "hidden": D, "dtype": "f32"})


@pytest.fixture
def inputs(rng):
    y = rng.standard_normal((R, D)).astype(np.float32)
    dst = rng.permutation(R)[: T * K].astype(np.int32)
    w = rng.random((T, K)).astype(np.float32)
    return y, dst, w


def refused(match, fn, *a):
    with pytest.raises(ValueError, match=match):
        fn(*a)


# ---- read-only outputs


def test_a_read_only_numpy_output_is_refused_by_name(comb, inputs):
    out = poisoned((T, D), np.float32)
    out.flags.writeable = False
    refused(r"^combine: output 'out' is read-only \(a read-only numpy array", moebench.combine, comb, *inputs, out)
    assert np.isnan(out).all()


def test_bytes_and_buffers_over_them_are_refused(comb, inputs):
    data = np.full((T, D), np.nan, np.float32).tobytes()
    refused(r"^combine: output 'out' is read-only \(bytes are immutable\)", moebench.combine, comb, *inputs, data)
    over = np.frombuffer(data, np.float32).reshape(T, D)
    refused(r"^combine: output 'out' is read-only", moebench.combine, comb, *inputs, over)
    refused(r"^combine: output 'out' is read-only \(a read-only memoryview\)", moebench.combine, comb, *inputs,
            memoryview(data))
    assert np.isnan(np.frombuffer(data, np.float32)).all()


def test_a_read_only_memory_map_output_is_refused_not_a_crash(comb, inputs, tmp_path):
    path = tmp_path / "out.npy"
    np.save(path, poisoned((T, D), np.float32))
    out = np.load(path, mmap_mode="r")
    refused(r"^combine: output 'out' is read-only .*mmap_mode='r'", moebench.combine, comb, *inputs, out)
    assert np.isnan(np.load(path)).all()


class _Exported:
    """Any other producer: only its DLPack export says whether it may be written."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_an_export_flagged_read_only_is_refused(comb, inputs):
    out = poisoned((T, D), np.float32)
    out.flags.writeable = False
    refused(r"^combine: output 'out' is read-only \(its DLPack export is flagged read-only\)", moebench.combine, comb,
            *inputs, _Exported(out))
    writable = poisoned((T, D), np.float32)
    moebench.combine(comb, *inputs, _Exported(writable))  # the same producer, writable: written
    np.testing.assert_allclose(writable, combine_reference(*inputs), rtol=1e-5, atol=1e-5)


def test_a_read_only_workspace_is_refused(rng):
    up = cpu_kernel("gmm", {"experts": 2, "topk": 1, "hidden": 16, "intermediate": 8, "dtype": "f16", "align": 1})
    x = rng.standard_normal((4, 16)).astype(np.float16)
    w13 = rng.standard_normal((2, 16, 16)).astype(np.float16)
    h = poisoned((4, 8), np.float16)
    ws = np.zeros(max(up.workspace_bytes(4), 64), np.uint8)
    ws.flags.writeable = False
    refused(r"^gmm_up: output 'workspace' is read-only", moebench.gmm_up, up, 4, x, np.array([0, 2, 4], np.int32),
            w13, h, ws)
    assert np.isnan(h.astype(np.float32)).all()


def test_a_jax_array_output_is_refused_pointing_at_moebench_jax(comb, inputs):
    jnp = pytest.importorskip("jax.numpy")
    out = jnp.full((T, D), jnp.nan, jnp.float32)
    refused(r"^combine: output 'out' is read-only \(JAX arrays are immutable: moebench.jax returns",
            moebench.combine, comb, *inputs, out)
    assert bool(jnp.isnan(out).all())


def test_read_only_inputs_are_read(comb, inputs, tmp_path):
    y, dst, w = inputs
    np.save(tmp_path / "y.npy", y)
    mapped = np.load(tmp_path / "y.npy", mmap_mode="r")  # weights are often mapped so
    frozen = w.copy()
    frozen.flags.writeable = False
    out = poisoned((T, D), np.float32)
    moebench.combine(comb, mapped, dst, frozen, out)
    np.testing.assert_allclose(out, combine_reference(y, dst, w), rtol=1e-5, atol=1e-5)


# ---- outputs that share memory


def test_an_output_over_an_input_is_refused(comb, inputs):
    y, dst, w = inputs
    before = y.copy()
    refused(r"^combine: output 'out' shares memory with input 'y_sorted'", moebench.combine, comb, y, dst, w, y[:T])
    np.testing.assert_array_equal(y, before)


def test_dispatch_into_its_own_input_is_refused(rng):
    disp = cpu_kernel("dispatch", {"experts": 4, "topk": 2, "hidden": 8, "dtype": "f32", "align": 1})
    n = disp.max_rows(3)
    buf = rng.standard_normal((n, 8)).astype(np.float32)
    x = buf[:3]  # x is the first rows of x_sorted's buffer
    ids = np.array([[0, 1], [2, 3], [1, 0]], np.int32)
    before = buf.copy()
    refused(r"^dispatch: output 'x_sorted' shares memory with input 'x'", moebench.dispatch, disp, x, ids,
            poisoned(5, np.int32), poisoned(n, np.int32), poisoned(6, np.int32), buf)
    np.testing.assert_array_equal(buf, before)


def test_two_outputs_over_one_buffer_are_refused(rng):
    router = cpu_kernel("router", {"experts": 16, "topk": 4})
    logits = rng.standard_normal((8, 16)).astype(np.float32)
    buf = poisoned((8, 4), np.float32)
    ids = buf.view(np.int32)
    refused(r"^router: output 'ids' shares memory with output 'weights'", moebench.router, router, logits, None, buf,
            ids)
    assert np.isnan(buf).all()


def test_a_workspace_over_an_input_is_refused(rng):
    up = cpu_kernel("gmm", {"experts": 2, "topk": 1, "hidden": 16, "intermediate": 8, "dtype": "f16", "align": 1})
    x = rng.standard_normal((4, 16)).astype(np.float16)
    w13 = rng.standard_normal((2, 16, 16)).astype(np.float16)
    h = poisoned((4, 8), np.float16)
    refused(r"^gmm: the workspace shares memory with input 'w13'", moebench.gmm_up, up, 4, x,
            np.array([0, 2, 4], np.int32), w13, h, w13.reshape(-1).view(np.uint8))
    assert np.isnan(h.astype(np.float32)).all()


def test_neighbouring_slices_of_one_buffer_are_fine(comb, inputs):
    y, dst, w = inputs
    buf = np.full(R * D + T * D, np.nan, np.float32)
    buf[: R * D] = y.reshape(-1)
    y_view, out = buf[: R * D].reshape(R, D), buf[R * D:].reshape(T, D)
    moebench.combine(comb, y_view, dst, w, out)
    np.testing.assert_allclose(out, combine_reference(y, dst, w), rtol=1e-5, atol=1e-5)


# ---- token counts


def test_token_counts_outside_the_cli_range_are_refused(rng):
    disp = cpu_kernel("dispatch", {"experts": 4, "topk": 2, "hidden": 8, "dtype": "f32"})
    for bad in (0, -5, 2**24 + 1, 2**61, 2**70, -(2**70)):
        refused(r"^dispatch: tokens = %d is out of range \[1, 16777216\], the token counts --tokens takes$" % bad,
                disp.max_rows, bad)
        for method in (disp.config, disp.describe, disp.workspace_bytes, disp.outputs):
            refused(r"tokens = %d is out of range \[1, 16777216\]" % bad, method, bad)
    assert disp.max_rows(2**24) >= 2**25  # the largest count is taken


def test_gmm_tokens_outside_the_range_are_refused(rng):
    up = cpu_kernel("gmm", {"experts": 2, "topk": 1, "hidden": 16, "intermediate": 8, "dtype": "f16", "align": 1})
    x = rng.standard_normal((4, 16)).astype(np.float16)
    w13 = rng.standard_normal((2, 16, 16)).astype(np.float16)
    w2 = rng.standard_normal((2, 16, 8)).astype(np.float16)
    offsets = np.array([0, 2, 4], np.int32)
    h = poisoned((4, 8), np.float16)
    y = poisoned((4, 16), np.float16)
    for bad in (0, -5, 2**62):
        refused(r"^gmm: tokens = %d is out of range \[1, 16777216\]" % bad, moebench.gmm_up, up, bad, x, offsets,
                w13, h)
        refused(r"^gmm: tokens = %d is out of range" % bad, moebench.gmm_down, up, bad, h, offsets, w2, None, y)
    assert np.isnan(h.astype(np.float32)).all() and np.isnan(y.astype(np.float32)).all()


def test_jax_token_counts_are_checked_at_trace_time(rng):
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    pytest.importorskip("jax_tvm_ffi")
    import moebench.jax as mj

    up = cpu_kernel("gmm", {"experts": 2, "topk": 1, "hidden": 16, "intermediate": 8, "dtype": "bf16", "align": 1})
    x = jnp.zeros((4, 16), jnp.bfloat16)
    w13 = jnp.zeros((2, 16, 16), jnp.bfloat16)
    with pytest.raises(ValueError, match=r"^gmm: tokens = 0 is out of range"):
        jax.jit(lambda x, o, w: mj.gmm_up(up, 0, x, o, w))(x, np.array([0, 2, 4], np.int32), w13)


# ---- what is not a Kernel


def test_anything_but_a_kernel_is_a_type_error(comb, inputs):
    out = poisoned((T, D), np.float32)
    for wrong in ("combine", None, 3, comb._handle):
        with pytest.raises(TypeError, match=r"expected a moebench.Kernel as the first argument"):
            moebench.combine(wrong, *inputs, out)
    import moebench.torch as mt  # the op wrappers check before torch is imported

    had_torch = "torch" in sys.modules
    with pytest.raises(TypeError, match=r"expected a moebench.Kernel"):
        mt.combine("combine", *inputs, out)
    with pytest.raises(TypeError, match=r"expected a moebench.Kernel"):
        mt.kernel_id(object())
    assert ("torch" in sys.modules) == had_torch


def test_anything_but_a_kernel_is_a_type_error_under_jax(inputs):
    pytest.importorskip("jax")
    pytest.importorskip("jax_tvm_ffi")
    import moebench.jax as mj

    with pytest.raises(TypeError, match=r"expected a moebench.Kernel"):
        mj.combine("combine", *inputs)
    with pytest.raises(TypeError, match=r"expected a moebench.Kernel"):
        mj.router(object(), inputs[0])
