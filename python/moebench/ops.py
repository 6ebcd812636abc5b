"""The entry points of moe/moe.hpp: the same tensors in the same order as their C++ namesakes,
None where C++ takes a null pointer. Outputs are the caller's and are written in place; nothing
is allocated. Tensors are anything with __dlpack__ (numpy, torch, ...): host memory on the cpu
backend, the kernel's GPU on the cuda one (then the work goes on the caller's current stream)."""

from ._module import lib
from .kernel import handle


def router(kernel, logits, bias, weights, ids):
    lib().router(handle(kernel), logits, bias, weights, ids)


def dispatch(kernel, x, ids, offsets, src, dst, x_sorted, workspace=None):
    """src and x_sorted hold kernel.max_rows(T) rows; offsets[-1] says how many are used."""
    lib().dispatch(handle(kernel), x, ids, offsets, src, dst, x_sorted, workspace)


def gmm_up(kernel, tokens, x_sorted, offsets, w13, h, workspace=None):
    lib().gmm_up(handle(kernel), int(tokens), x_sorted, offsets, w13, h, workspace)


def gmm_down(kernel, tokens, h, offsets, w2, row_weight, y_sorted, workspace=None):
    lib().gmm_down(handle(kernel), int(tokens), h, offsets, w2, row_weight, y_sorted, workspace)


def combine(kernel, y_sorted, dst, weights, out):
    lib().combine(handle(kernel), y_sorted, dst, weights, out)


def moe_layer(kernel, logits, bias, x, w13, w2, out, workspace=None):
    """workspace: kernel.workspace_bytes(T) bytes (any dtype) for the layer's intermediates."""
    lib().moe_layer(handle(kernel), logits, bias, x, w13, w2, out, workspace)


def moe_layer_fp8(kernel, logits, bias, x, w13, w13_scale, w2, w2_scale, out, workspace=None):
    """A kernel of dtype fp8 (docs/fp8.md): w13, w2 float8_e4m3fn, one float32 scale per 128x128
    block (w13_scale [E, 2I/128, D/128], w2_scale [E, D/128, I/128]); logits, x and out bf16."""
    lib().moe_layer_fp8(handle(kernel), logits, bias, x, w13, w13_scale, w2, w2_scale, out, workspace)
