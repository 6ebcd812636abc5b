"""moebench from Python: the MoE kernels and their tuned tables over one framework-agnostic
module (apache-tvm-ffi, DLPack tensors). moebench.torch and moebench.jax wrap the same
functions for PyTorch (custom ops) and JAX (jax.jit). See docs/python.md."""

from .kernel import Kernel, build_id
from .ops import combine, dispatch, gmm_down, gmm_up, moe_layer, moe_layer_fp8, moe_layer_w4, router
from .weights import prepare_weights

__all__ = ["Kernel", "build_id", "router", "dispatch", "gmm_up", "gmm_down", "combine", "moe_layer", "moe_layer_fp8",
           "moe_layer_w4", "prepare_weights"]
