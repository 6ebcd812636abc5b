"""moebench from JAX: each entry point as an XLA FFI target (jax-tvm-ffi), called with
jax.ffi.ffi_call, so it composes with jax.jit. Outputs are returned, as JAX arrays are
immutable; the Kernel's backend picks the platform (cpu: host arrays; cuda: the GPU, on XLA's
stream). The workspace a call needs is one more uint8 result, dropped before returning.

    k = moebench.Kernel("combine", {"experts": 8, "topk": 2, "hidden": 64}, backend="cpu")
    out = jax.jit(lambda y, dst, w: moebench.jax.combine(k, y, dst, w))(y_sorted, dst, weights)
"""

import itertools
import json

import jax
import jax.numpy as jnp
import jax_tvm_ffi
import numpy as np

from ._module import lib
from .kernel import handle

_DTYPES = {"f32": jnp.float32, "f16": jnp.float16, "bf16": jnp.bfloat16, "i32": jnp.int32,
           "e4m3": jnp.float8_e4m3fn}
_names = itertools.count()


def _target(kernel, entry, none_at, attrs=()):
    """The XLA target calling `entry` with the kernel bound, registered once per kernel."""
    targets = kernel.__dict__.setdefault("_jax_targets", {})
    key = (entry, tuple(none_at))
    if key not in targets:
        bound = lib().kernel_bind(handle(kernel), getattr(lib(), entry), list(none_at))
        name = f"moebench_{entry}_{next(_names)}"
        platform = "gpu" if kernel.backend == "cuda" else "cpu"
        jax_tvm_ffi.register_ffi_target(name, bound, [*(f"attrs.{a}" for a in attrs), "args", "rets"],
                                        platform=platform, allow_cuda_graph=True)
        targets[key] = name
    return targets[key]


def _call(kernel, entry, inputs, none_at, tokens, rows, workspace_at=None, attrs=None):
    """inputs: name -> array in the entry's order; None where the problem takes no such tensor."""
    handle(kernel)  # a TypeError for anything but a Kernel, before any of its methods is asked for
    given = {n: a for n, a in inputs.items() if a is not None}
    outs = kernel.outputs(tokens, rows)
    shapes = [jax.ShapeDtypeStruct(tuple(o["shape"]), _DTYPES[o["dtype"]]) for o in outs]
    # The eager call's checks, at trace time: a wrong shape is a ValueError here, not an XLA error.
    spec = lambda a: [jnp.dtype(a.dtype).name, list(a.shape)]
    lib().kernel_check(handle(kernel), int(tokens), int(rows), json.dumps({n: spec(a) for n, a in given.items()}),
                       json.dumps({o["name"]: spec(r) for o, r in zip(outs, shapes)}))
    ws = kernel.workspace_bytes(tokens) if workspace_at is not None else 0
    if ws:
        shapes.append(jax.ShapeDtypeStruct((ws,), jnp.uint8))
    holes = list(none_at) + ([workspace_at] if workspace_at is not None and not ws else [])
    name = _target(kernel, entry, holes, tuple(attrs or ()))
    out = jax.ffi.ffi_call(name, shapes)(*given.values(), **(attrs or {}))
    return tuple(out[:-1]) if ws else tuple(out)


def _absent(inputs):
    """The positions of the entry's optional inputs the caller left out."""
    return [i for i, a in enumerate(inputs.values()) if a is None]


def router(kernel, logits, bias=None):
    """(weights [T,K] f32, ids [T,K] i32)."""
    return _call(kernel, "router", {"logits": logits, "bias": bias}, [1] if bias is None else [], logits.shape[0],
                 logits.shape[0])


def dispatch(kernel, x, ids):
    """(offsets, src, dst, x_sorted): src and x_sorted hold kernel.max_rows(T) rows."""
    return _call(kernel, "dispatch", {"x": x, "ids": ids}, [], x.shape[0], x.shape[0], workspace_at=6)


def gmm_up(kernel, tokens, x_sorted, offsets, w13):
    """h [R, I]."""
    return _call(kernel, "gmm_up", {"x_sorted": x_sorted, "offsets": offsets, "w13": w13}, [], tokens, x_sorted.shape[0], workspace_at=5,
                 attrs={"tokens": np.int64(tokens)})[0]


def gmm_down(kernel, tokens, h, offsets, w2, row_weight=None):
    """y_sorted [R, D]."""
    args = {"h": h, "offsets": offsets, "w2": w2, "row_weight": row_weight}
    return _call(kernel, "gmm_down", args, [4] if row_weight is None else [], tokens, h.shape[0], workspace_at=6,
                 attrs={"tokens": np.int64(tokens)})[0]


def combine(kernel, y_sorted, dst, weights):
    """out [T, D]."""
    return _call(kernel, "combine", {"y_sorted": y_sorted, "dst": dst, "weights": weights}, [], weights.shape[0], y_sorted.shape[0])[0]


def moe_layer(kernel, logits, bias, x, w13, w2, bias13=None, bias2=None):
    """out [T, D]; the layer's intermediates in a workspace XLA allocates. bias13, bias2: the
    experts' biases of a problem that has them."""
    args = {"logits": logits, "bias": bias, "x": x, "w13": w13, "w2": w2, "bias13": bias13, "bias2": bias2}
    return _call(kernel, "moe_layer", args, _absent(args), x.shape[0], x.shape[0], workspace_at=8)[0]


def moe_layer_fp8(kernel, logits, bias, x, w13, w13_scale, w2, w2_scale):
    """out [T, D] bf16 from a kernel of dtype fp8: w13, w2 float8_e4m3fn with float32 128x128 block scales."""
    args = {"logits": logits, "bias": bias, "x": x, "w13": w13, "w13_scale": w13_scale, "w2": w2, "w2_scale": w2_scale}
    return _call(kernel, "moe_layer_fp8", args, [1] if bias is None else [], x.shape[0], x.shape[0], workspace_at=8)[0]
