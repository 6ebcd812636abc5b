"""`python -m moebench.peers.worker --engine vllm`: an engine backend's worker process.

`moebench sweep --backend vllm` starts it with the tuner's pipes on fds 0 and 3 (--attached); it
loads the engine's kernel (kernels.py), then runs moebench's own worker loop (the FFI module
_peers.so) with that kernel as the gmm family's backend: the requests, inputs, reference,
validation and timers are moebench's, only the kernel calls come back here.

--check loads the kernel and prints one JSON line saying what was loaded; when it cannot be
loaded it prints one `moebench: error:` line and exits 2, which the sweep passes on.
--interpret: Triton's interpreter on host tensors (no GPU; the times are the interpreter's).
"""

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path


def _fail(msg):
    print(f"moebench: error: {msg}", flush=True)
    return 2


def _serve_module():
    import tvm_ffi

    given = os.environ.get("MOEBENCH_PEERS_LIBRARY")
    path = Path(given) if given else Path(__file__).resolve().parents[1] / "_peers.so"
    if not path.is_file():
        raise FileNotFoundError(f"the engine worker's FFI module {path} is not built: build the moebench_ffi_peers target (scripts/setup.sh)")
    return tvm_ffi.load_module(str(path))


def _call(loaded, problem, config, names, tensors, stream, device):
    """One kernel call on the family's inputs and outputs (DLPack views, on the caller's stream):
    the layer's when the inputs hold its router logits, else a gmm stage's."""
    import torch

    from . import gmm, layer

    t = {str(name): torch.from_dlpack(x) for name, x in zip(names, tensors)}
    # The worker's bench made the tensors on its device; torch's current device may be another.
    on = next(iter(t.values())).device
    with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=on)) if device else contextlib.nullcontext():
        (layer if "logits" in t else gmm).run(loaded, problem, config, t)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m moebench.peers.worker")
    p.add_argument("--engine", required=True)
    p.add_argument("--check", action="store_true")
    p.add_argument("--attached", action="store_true")
    p.add_argument("--interpret", action="store_true")
    a = p.parse_args(argv)
    if a.interpret:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    from . import kernels

    try:
        loaded = kernels.load(a.engine)
    except kernels.Unavailable as e:
        return _fail(str(e))
    if a.check:
        try:
            _serve_module()
        except (ImportError, FileNotFoundError) as e:
            return _fail(f"--backend {a.engine}: {e}")
        print(json.dumps({"engine": a.engine, "kernel": loaded.source, "version": loaded.version,
                          "standin": loaded.standin, "triton": kernels.triton_version(),
                          "interpreter": os.environ.get("TRITON_INTERPRET") == "1"}), flush=True)
        return 0
    if not a.attached:
        return _fail("the engine worker is started by `moebench sweep --backend ENGINE` with its pipes attached; it is not run by hand")
    import tvm_ffi

    def runner(engine, problem, config, names, tensors, stream, device, ordinal):
        _call(loaded, json.loads(problem), json.loads(config), names, tensors, stream, device)

    timer = "triton-interpreter" if os.environ.get("TRITON_INTERPRET") == "1" else "steady_clock"
    # fd 1 is the tuner's stderr pipe: the protocol is on fd 3 only.
    return int(_serve_module().serve(a.engine, tvm_ffi.convert(runner), timer))


if __name__ == "__main__":
    sys.exit(main())
