"""Finds an engine's Triton fused_moe kernel without importing the engine.

Importing vLLM's fused_moe module imports most of vLLM (its compiled ops, its platform
detection, a pinned torch); the kernel itself is one @triton.jit function in one file. So the
engine's package is found on the path (never imported), that file is parsed, and its @triton.jit
functions are written to a module of their own that imports only triton: the engine's own kernel
source, loaded with this process's torch and triton.

MOEBENCH_PEERS_KERNEL=standin loads moebench's stand-in instead (standin.py: a kernel written for
the tests with vLLM's calling convention), for machines without the engine's package.
"""

import ast
import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


class Unavailable(Exception):
    """The engine's kernel cannot be loaded; the message says why and what to do."""


@dataclass
class Loaded:
    engine: str
    kernel: object  # the @triton.jit fused_moe_kernel
    source: str  # "vllm 0.33.0: .../fused_moe.py" or "stand-in: ..."
    version: str
    standin: bool
    extra: dict  # more keyword arguments for the kernel (the broken stand-in's BROKEN_K)


# Where each engine keeps the kernel, newest layout first (relative to the package folder).
KERNEL_FILES = {
    "vllm": ["model_executor/layers/fused_moe/fused_moe.py"],
    "sglang": [
        "kernels/ops/moe/fused_moe_triton_kernels.py",
        "srt/layers/moe/fused_moe_triton/fused_moe_triton_kernels.py",
    ],
}
INSTALL_HINT = {
    "vllm": "pip download vllm --no-deps and unpack the wheel into a folder on PYTHONPATH (only its fused_moe.py is read)",
    "sglang": "pip download sglang --no-deps and unpack the wheel into a folder on PYTHONPATH (only its fused_moe_triton_kernels.py is read)",
}


def _package_dir(engine):
    spec = importlib.machinery.PathFinder.find_spec(engine, sys.path)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _is_triton_jit(dec):
    node = dec.func if isinstance(dec, ast.Call) else dec
    return isinstance(node, ast.Attribute) and node.attr == "jit" and getattr(node.value, "id", "") == "triton"


def _jit_module(engine, path):
    text = path.read_text()
    tree = ast.parse(text)
    parts = ["import triton\nimport triton.language as tl\n"]
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(_is_triton_jit(d) for d in node.decorator_list):
            start = min(d.lineno for d in node.decorator_list)
            lines = text.splitlines()[start - 1 : node.end_lineno]
            parts.append("\n".join(lines) + "\n")
            names.append(node.name)
    if "fused_moe_kernel" not in names:
        raise Unavailable(f"{path} has no @triton.jit fused_moe_kernel: this {engine} version keeps it elsewhere")
    source = "\n\n".join(parts)
    # Triton reads a kernel's source back from its file, so the extract is a real file.
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    folder = Path(os.environ.get("MOEBENCH_PEERS_CACHE") or Path(tempfile.gettempdir()) / f"moebench-peers-{os.getuid()}")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{engine}_fused_moe_{digest}.py"
    if not target.is_file():
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        tmp.replace(target)
    spec = importlib.util.spec_from_file_location(f"moebench_peer_{engine}_{digest}", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fused_moe_kernel


def load(engine):
    if engine not in KERNEL_FILES:
        raise Unavailable(f"unknown engine '{engine}': use vllm or sglang")
    for needed in ("torch", "triton"):
        if importlib.util.find_spec(needed) is None:
            raise Unavailable(
                f"--backend {engine}: {needed} is not importable by {sys.executable}; put the folder holding torch and "
                "triton on PYTHONPATH (or point MOEBENCH_PYTHON at the engine's Python)"
            )
    import triton

    which = os.environ.get("MOEBENCH_PEERS_KERNEL", "")
    if which in ("standin", "standin-broken"):
        from . import standin

        extra = {"BROKEN_K": 128} if which == "standin-broken" else {}
        return Loaded(engine, standin.fused_moe_kernel, f"{which}: {standin.__file__}", which, True, extra)
    folder = _package_dir(engine)
    if folder is None:
        raise Unavailable(f"--backend {engine}: the {engine} package is not on PYTHONPATH of {sys.executable}; {INSTALL_HINT[engine]}")
    path = next((folder / f for f in KERNEL_FILES[engine] if (folder / f).is_file()), None)
    if path is None:
        raise Unavailable(f"--backend {engine}: {folder} holds none of {', '.join(KERNEL_FILES[engine])}: not a {engine} this moebench knows")
    try:
        version = importlib.metadata.version(engine)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    try:
        kernel = _jit_module(engine, path)
    except SyntaxError as e:
        raise Unavailable(f"--backend {engine}: {path} does not parse with this Python ({e})") from None
    return Loaded(engine, kernel, f"{engine} {version}: {path}", version, False, {})


def triton_version():
    import triton

    return triton.__version__
