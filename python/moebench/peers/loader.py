"""The engines' own config-file loaders, run without importing the engines.

`moebench sweep --backend vllm|sglang --engine-config DIR` writes the engine's tuned-config file.
Whether the engine finds and reads it is decided by two functions of the engine's source:
get_config_file_name (the name it looks for) and get_moe_configs (where it looks, and how it
parses). Importing either engine needs its compiled ops and pinned torch, so, as kernels.py does
for the kernel, the two functions' source is taken from the engine's file and executed with the
few names they use from the rest of the engine stubbed: the device name, the folder setting
(vLLM's VLLM_TUNED_CONFIG_FOLDER, SGLang's SGLANG_MOE_CONFIG_DIR), Triton's version (SGLang's
folder name) and a logger. What reads the file is then the engine's code, not a copy of it.
"""

import ast
import functools
import json
import os
import typing
from pathlib import Path

from . import kernels

# Where each engine keeps its loader, relative to the package folder, newest layout first.
LOADER_FILES = {
    "vllm": ["model_executor/layers/fused_moe/fused_moe.py"],
    "sglang": [
        "srt/layers/moe/moe_runner/triton_utils/fused_moe_triton_config.py",
        "srt/layers/moe/fused_moe_triton/fused_moe_triton_config.py",
    ],
}
FUNCTIONS = ("get_config_file_name", "get_moe_configs")


class _Logger:
    def __getattr__(self, name):
        return lambda *a, **k: None


class _Namespace:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def _functions(path, wanted):
    text = Path(path).read_text()
    tree = ast.parse(text)
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    missing = set(wanted) - {n.name for n in found}
    if missing:
        raise kernels.Unavailable(f"{path} has no {', '.join(sorted(missing))}: this engine version keeps its loader elsewhere")
    return ast.Module(body=found, type_ignores=[])


def engine_loader(engine, folder, device_name, triton_version):
    """The engine's get_moe_configs, looking in `folder` as the engine does when the user points it
    there, on a device named `device_name` (what torch.cuda.get_device_name() says), with Triton
    `triton_version`. Returns (get_moe_configs, get_config_file_name, the source file)."""
    pkg = kernels._package_dir(engine)
    if pkg is None:
        raise kernels.Unavailable(f"the {engine} package is not on PYTHONPATH: {kernels.INSTALL_HINT[engine]}")
    path = next((pkg / f for f in LOADER_FILES[engine] if (pkg / f).is_file()), None)
    if path is None:
        raise kernels.Unavailable(f"{pkg} holds none of {', '.join(LOADER_FILES[engine])}")
    names = {"functools": functools, "json": json, "os": os, "logger": _Logger(), "__file__": str(path)}
    names.update({k: getattr(typing, k) for k in ("Any", "Dict", "List", "Optional", "Tuple")})
    if engine == "vllm":
        names["envs"] = _Namespace(VLLM_BATCH_INVARIANT=False, VLLM_TUNED_CONFIG_FOLDER=str(folder))
        names["get_device_name_as_file_name"] = lambda: device_name.replace(" ", "_")
    else:
        names["get_device_name"] = lambda: device_name
        names["get_exec"] = lambda: _Namespace(deterministic=_Namespace(enable_deterministic_inference=False))
        names["triton"] = _Namespace(__version__=triton_version)
        os.environ["SGLANG_MOE_CONFIG_DIR"] = str(folder)
    code = compile(_functions(path, FUNCTIONS), str(path), "exec")
    exec(code, names)
    return names["get_moe_configs"], names["get_config_file_name"], path


def read_back(engine, folder, experts, inter, device_name, triton_version, fp8=False, down=False):
    """What the engine's loader returns for one problem: {tokens: config} or None (not found)."""
    get_moe_configs, _, _ = engine_loader(engine, folder, device_name, triton_version)
    dtype = "fp8_w8a8" if fp8 else None
    block = (128, 128) if fp8 else (None, None) if engine == "vllm" else (0, 0)
    if engine == "vllm":
        return get_moe_configs(experts, inter, dtype, *block)
    return get_moe_configs(experts, inter, dtype, *block, False, down_moe=down)
