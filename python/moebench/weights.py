"""Weight preparation (moe/weights.hpp): w13 [E, 2I, D] or bias13 [E, 2I] re-laid into the row
order a problem's w13_layout and w13_block name, once at load time, in host memory."""

from ._buffers import check_outputs
from ._buffers import input_view as _in
from ._module import lib


def prepare_weights(w13, out, layout="interleaved", block=1, from_layout="split", from_block=1):
    """Writes `out` (w13's dtype and shape, memory of its own) = `w13` with its gate and up rows
    moved from `from_layout` into `layout`: "split" (gate rows 0..I-1, then up rows) or
    "interleaved" (gate and up rows alternate in blocks of `block` rows; gpt-oss stores block 1).
    Give a Kernel's problem its weights in its own layout: kernel.problem["w13_layout"], ["w13_block"]."""
    check_outputs("prepare_weights", out=out)
    lib().prepare_weights(_in(w13), out, str(layout), int(block), str(from_layout), int(from_block))
