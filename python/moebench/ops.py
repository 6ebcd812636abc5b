"""The entry points of moe/moe.hpp: the same tensors in the same order as their C++ namesakes,
None where C++ takes a null pointer. Outputs are the caller's and are written in place; nothing
is allocated. Tensors are anything with __dlpack__ (numpy, torch, ...): host memory on the cpu
backend, the kernel's GPU on the cuda one (then the work goes on the caller's current stream).
An output must be writable and share no memory with an input or another output (ValueError)."""

from ._buffers import check_outputs
from ._buffers import input_view as _in
from ._module import lib
from .kernel import handle, tokens_arg


def router(kernel, logits, bias, weights, ids):
    h = handle(kernel)
    check_outputs("router", weights=weights, ids=ids)
    lib().router(h, _in(logits), _in(bias), weights, ids)


def dispatch(kernel, x, ids, offsets, src, dst, x_sorted, workspace=None):
    """src and x_sorted hold kernel.max_rows(T) rows; offsets[-1] says how many are used."""
    h = handle(kernel)
    check_outputs("dispatch", offsets=offsets, src=src, dst=dst, x_sorted=x_sorted, workspace=workspace)
    lib().dispatch(h, _in(x), _in(ids), offsets, src, dst, x_sorted, workspace)


def gmm_up(kernel, tokens, x_sorted, offsets, w13, h, workspace=None):
    k = handle(kernel)
    check_outputs("gmm_up", h=h, workspace=workspace)
    lib().gmm_up(k, tokens_arg(kernel, tokens), _in(x_sorted), _in(offsets), _in(w13), h, workspace)


def gmm_down(kernel, tokens, h, offsets, w2, row_weight, y_sorted, workspace=None):
    k = handle(kernel)
    check_outputs("gmm_down", y_sorted=y_sorted, workspace=workspace)
    lib().gmm_down(k, tokens_arg(kernel, tokens), _in(h), _in(offsets), _in(w2), _in(row_weight), y_sorted,
                   workspace)


def combine(kernel, y_sorted, dst, weights, out):
    h = handle(kernel)
    check_outputs("combine", out=out)
    lib().combine(h, _in(y_sorted), _in(dst), _in(weights), out)


def moe_layer(kernel, logits, bias, x, w13, w2, out, workspace=None, bias13=None, bias2=None):
    """workspace: kernel.workspace_bytes(T) bytes (any dtype) for the layer's intermediates.
    bias13 [E, 2I] and bias2 [E, D]: the experts' biases of a problem with bias13=1 / bias2=1
    (gpt-oss), in the activations' dtype, rows in w13's order."""
    h = handle(kernel)
    check_outputs("moe_layer", out=out, workspace=workspace)
    lib().moe_layer(h, _in(logits), _in(bias), _in(x), _in(w13), _in(w2), _in(bias13), _in(bias2), out, workspace)


def moe_layer_fp8(kernel, logits, bias, x, w13, w13_scale, w2, w2_scale, out, workspace=None):
    """A kernel of dtype fp8 (docs/fp8.md): w13, w2 float8_e4m3fn, one float32 scale per 128x128
    block (w13_scale [E, 2I/128, D/128], w2_scale [E, D/128, I/128]); logits, x and out bf16."""
    h = handle(kernel)
    check_outputs("moe_layer_fp8", out=out, workspace=workspace)
    lib().moe_layer_fp8(h, _in(logits), _in(bias), _in(x), _in(w13), _in(w13_scale), _in(w2), _in(w2_scale), out,
                        workspace)


def moe_layer_w4(kernel, logits, bias, x, w13, w13_scale, w2, w2_scale, out, workspace=None, w13_zero=None, w2_zero=None,
                 bias13=None, bias2=None):
    """A kernel of dtype mxfp4 or int4 (docs/w4.md), the weights as checkpoints store them. mxfp4:
    w13 [E, 2I, D/2] and w2 [E, D, I/2] uint8 (two e2m1 codes a byte, the even K element in the
    low nibble), w13_scale [E, 2I, D/32] and w2_scale [E, D, I/32] uint8 e8m0. int4: w13 [E, 2I, D/8]
    and w2 [E, D, I/8] int32 (eight codes a word along K, the first in the lowest bits), bf16
    scales [E, N, K/group], and with zero_point=1 int32 zero points [E, N/8, K/group]. logits, x and
    out bf16, and so are the experts' biases bias13 [E, 2I] and bias2 [E, D] of a problem that has
    them (gpt-oss)."""
    h = handle(kernel)
    check_outputs("moe_layer_w4", out=out, workspace=workspace)
    lib().moe_layer_w4(h, _in(logits), _in(bias), _in(x), _in(w13), _in(w13_scale), _in(w13_zero), _in(w2), _in(w2_scale),
                       _in(w2_zero), _in(bias13), _in(bias2), out, workspace)
