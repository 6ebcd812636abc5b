"""moebench from PyTorch: the entry points as torch.library custom ops (torch.ops.moebench.router
and the rest), registered on first use, each naming the outputs it writes in mutates_args and with
a fake implementation, so torch.compile traces them and CUDA graphs capture them. A custom op's
schema cannot hold a Kernel: the ops take the id that kernel_id() gives it, and the functions
here, which mirror moebench.router and the rest, pass it for you. The work runs on the caller's
current CUDA stream (tvm-ffi reads it from torch for each call).

    k = moebench.Kernel("router", {"experts": 128, "topk": 8, "dtype": "bf16"})
    moebench.torch.router(k, logits, None, weights, ids)   # weights, ids: preallocated
"""

import functools
from typing import Optional

from . import ops
from .kernel import by_id, handle

_kernels = {}


def kernel_id(kernel) -> int:
    """The int the custom ops take for `kernel`; the Kernel stays alive as long as the module.
    Traceable: under torch.compile it reads the id the Kernel was given when it was made (a
    dict store made while tracing is replayed only after the graph has run)."""
    handle(kernel)  # a TypeError for anything but a Kernel
    kid = kernel._id
    _kernels[kid] = kernel
    return kid


def _kernel(kid: int):
    kernel = _kernels.get(kid) or by_id(kid)
    if kernel is None:
        raise ValueError(f"moebench.torch: no live moebench.Kernel has id {kid}; pass ids from kernel_id()")
    return kernel


def _constant_at_trace_time(fn):
    """What torch.compiler.assume_constant_result does (it marks the function: dynamo then runs it
    eagerly at trace time and uses its result as a constant), done here without importing torch,
    since importing moebench.torch must not import it. test_torch.py checks the marker is torch's."""
    fn._dynamo_marked_constant = True
    return fn


@_constant_at_trace_time
def _register():
    """Registers the custom ops, once; returns True. Run eagerly even inside torch.compile's trace
    (see _ensure_registered): registration is no traceable operation."""
    global _registered
    if _registered:
        return True
    import torch
    from torch import Tensor

    lib = "moebench::"

    @torch.library.custom_op(lib + "router", mutates_args=("weights", "ids"))
    def router(kernel: int, logits: Tensor, bias: Optional[Tensor], weights: Tensor, ids: Tensor) -> None:
        ops.router(_kernel(kernel), logits, bias, weights, ids)

    @torch.library.custom_op(lib + "dispatch", mutates_args=("offsets", "src", "dst", "x_sorted", "workspace"))
    def dispatch(kernel: int, x: Tensor, ids: Tensor, offsets: Tensor, src: Tensor, dst: Tensor, x_sorted: Tensor,
                 workspace: Optional[Tensor] = None) -> None:
        ops.dispatch(_kernel(kernel), x, ids, offsets, src, dst, x_sorted, workspace)

    @torch.library.custom_op(lib + "gmm_up", mutates_args=("h", "workspace"))
    def gmm_up(kernel: int, tokens: int, x_sorted: Tensor, offsets: Tensor, w13: Tensor, h: Tensor,
               workspace: Optional[Tensor] = None) -> None:
        ops.gmm_up(_kernel(kernel), tokens, x_sorted, offsets, w13, h, workspace)

    @torch.library.custom_op(lib + "gmm_down", mutates_args=("y_sorted", "workspace"))
    def gmm_down(kernel: int, tokens: int, h: Tensor, offsets: Tensor, w2: Tensor, row_weight: Optional[Tensor],
                 y_sorted: Tensor, workspace: Optional[Tensor] = None) -> None:
        ops.gmm_down(_kernel(kernel), tokens, h, offsets, w2, row_weight, y_sorted, workspace)

    @torch.library.custom_op(lib + "combine", mutates_args=("out",))
    def combine(kernel: int, y_sorted: Tensor, dst: Tensor, weights: Tensor, out: Tensor) -> None:
        ops.combine(_kernel(kernel), y_sorted, dst, weights, out)

    @torch.library.custom_op(lib + "moe_layer", mutates_args=("out", "workspace"))
    def moe_layer(kernel: int, logits: Tensor, bias: Optional[Tensor], x: Tensor, w13: Tensor, w2: Tensor,
                  out: Tensor, workspace: Optional[Tensor] = None, bias13: Optional[Tensor] = None,
                  bias2: Optional[Tensor] = None) -> None:
        ops.moe_layer(_kernel(kernel), logits, bias, x, w13, w2, out, workspace, bias13, bias2)

    @torch.library.custom_op(lib + "moe_layer_fp8", mutates_args=("out", "workspace"))
    def moe_layer_fp8(kernel: int, logits: Tensor, bias: Optional[Tensor], x: Tensor, w13: Tensor, w13_scale: Tensor,
                      w2: Tensor, w2_scale: Tensor, out: Tensor, workspace: Optional[Tensor] = None) -> None:
        ops.moe_layer_fp8(_kernel(kernel), logits, bias, x, w13, w13_scale, w2, w2_scale, out, workspace)

    @torch.library.custom_op(lib + "moe_layer_w4", mutates_args=("out", "workspace"))
    def moe_layer_w4(kernel: int, logits: Tensor, bias: Optional[Tensor], x: Tensor, w13: Tensor, w13_scale: Tensor,
                     w2: Tensor, w2_scale: Tensor, out: Tensor, workspace: Optional[Tensor] = None,
                     w13_zero: Optional[Tensor] = None, w2_zero: Optional[Tensor] = None,
                     bias13: Optional[Tensor] = None, bias2: Optional[Tensor] = None) -> None:
        ops.moe_layer_w4(_kernel(kernel), logits, bias, x, w13, w13_scale, w2, w2_scale, out, workspace, w13_zero, w2_zero,
                         bias13, bias2)

    # The ops only write into tensors they were given: under tracing there is nothing to do.
    for op in (router, dispatch, gmm_up, gmm_down, combine, moe_layer, moe_layer_fp8, moe_layer_w4):
        op.register_fake(lambda *args, **kwargs: None)
    _registered = True
    return True


_registered = False


def _ops():
    """torch.ops.moebench, registered first. Dynamo traces this function (it would not honour an
    lru_cache and would trace the registration itself); _register is marked to run eagerly at
    trace time, so a first call inside torch.compile(fullgraph=True) works too."""
    import torch

    _register()
    return torch.ops.moebench


def _forward(name):
    """moebench.<name>'s signature, through the custom op (which takes the Kernel's id)."""
    eager = getattr(ops, name)

    @functools.wraps(eager)
    def call(kernel, *args, **kwargs):
        kid = kernel_id(kernel)  # before torch is imported: a wrong argument says so either way
        getattr(_ops(), name)(kid, *args, **kwargs)

    return call


router, dispatch, gmm_up, gmm_down, combine, moe_layer, moe_layer_fp8, moe_layer_w4 = map(
    _forward, ("router", "dispatch", "gmm_up", "gmm_down", "combine", "moe_layer", "moe_layer_fp8", "moe_layer_w4"))
