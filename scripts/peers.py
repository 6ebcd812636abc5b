#!/usr/bin/env python3
"""Time the peers the targets compare against, on the GPU, with PyTorch.

For every target of scripts/targets.json whose metric is pct_peer (gmm prefill), read the
problem from that target's sweep results (DIR/<id>/0/results.json) and time cuBLAS's dense
bf16 GEMM on the same FLOPs (torch.matmul of [rows, K] x [K, N], rows = the rows the sweep's
problem routed to its local experts), and torch._grouped_mm on the same local experts with
equal rows each, where this torch has it (a target with "peer": "grouped_mm" is judged
against that one). For fp8 problems, also the per-expert block-scaled fp8 GEMM of cuBLASLt
(torch._scaled_mm with 1x128 activation and 128x128 weight scales), where this torch has that
recipe ("peer": "scaled_mm"); it is skipped, with the reason, where it does not. Writes
DIR/peers.json for scripts/check_targets.py.

usage: peers.py DIR [--targets scripts/targets.json] [--iters 20]
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def median_ms(torch, fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def gemm_shape(problem, tokens, flops=0):
    """(rows, N, K) of the gmm stage, up: [D] -> [2I], down: [I] -> [D]. The rows are those of the
    sweep's record (its FLOPs), so an expert-parallel slice is compared on its own rows; without
    them, every token's slots."""
    D, I = problem["hidden"], problem["intermediate"]
    N, K = (2 * I, D) if problem["stage"] == "up" else (D, I)
    rows = round(flops / (2.0 * N * K)) if flops > 0 else tokens * (problem["topk"] + problem.get("shared", 0))
    return rows, N, K


def local_experts(problem):
    """Experts of the problem's slice (--ep), every one when it names none."""
    total = problem["experts"] + problem.get("shared", 0)
    begin, end = problem.get("expert_begin", 0), problem.get("expert_end", -1)
    end = total if end is None or end < 0 else end
    return max(end - begin, 1)


def scaled_mm_blockwise(torch, per, N, K, E, iters):
    """TFLOP/s of E experts' [per,K] x [K,N] in e4m3, one torch._scaled_mm each, with fp32 scales
    per 1x128 of the activations and per 128x128 block of the weights, bf16 out. Raises where
    this torch or device has no such recipe (the caller records why)."""
    fp8 = torch.float8_e4m3fn
    xs = [torch.randn(per, K, device="cuda").to(fp8) for _ in range(E)]
    ws = [torch.randn(N, K, device="cuda").to(fp8) for _ in range(E)]  # K-major: .t() is column-major
    sa = [torch.rand(per, K // 128, device="cuda") + 0.5 for _ in range(E)]
    sb = [torch.rand(K // 128, N // 128, device="cuda") + 0.5 for _ in range(E)]

    def run():
        for x, w, a, b in zip(xs, ws, sa, sb):
            torch._scaled_mm(x, w.t(), scale_a=a, scale_b=b, out_dtype=torch.bfloat16)

    run()  # raises here when the recipe is missing
    ms = median_ms(torch, run, iters)
    return 2.0 * per * E * N * K / (ms * 1e-3) * 1e-12


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--targets", default=os.path.join(HERE, "targets.json"))
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("peers.py: PyTorch is not importable here; run it on the GPU machine")
    if not torch.cuda.is_available():
        sys.exit("peers.py: no CUDA device visible to PyTorch")
    with open(a.targets) as f:
        targets = json.load(f)["targets"]
    peers = {}
    for t in targets:
        if t["metric"] != "pct_peer":
            continue
        path = os.path.join(a.dir, t["id"], "0", "results.json")
        if not os.path.exists(path):
            print(f"peers.py: {t['id']}: {path} missing, run its sweep first", file=sys.stderr)
            continue
        with open(path) as f:
            recs = [r for r in json.load(f)["records"] if r.get("tokens") == t["tokens"]]
        if not recs:
            print(f"peers.py: {t['id']}: no record at tokens={t['tokens']}", file=sys.stderr)
            continue
        problem = recs[0]["problem"]
        M, N, K = gemm_shape(problem, t["tokens"], recs[0].get("flops", 0))
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        ms = median_ms(torch, lambda: torch.matmul(x, w), a.iters)
        entry = {"name": "cuBLAS dense bf16 GEMM (torch.matmul)", "shape": [M, N, K],
                 "median_ms": ms, "tflops": 2.0 * M * N * K / (ms * 1e-3) * 1e-12,
                 "torch": torch.__version__, "device": torch.cuda.get_device_name()}
        # The grouped peer: the slice's experts with equal rows each (the rows that do not
        # divide evenly are left out, and its FLOPs counted without them).
        E = local_experts(problem)
        per = M // E
        if hasattr(torch, "_grouped_mm") and per > 0:
            try:
                wg = torch.randn(E, N, K, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
                xg = x[: per * E]
                offs = torch.arange(per, per * E + 1, per, device="cuda", dtype=torch.int32)
                gms = median_ms(torch, lambda: torch._grouped_mm(xg, wg, offs=offs), a.iters)
                entry["grouped_mm_tflops"] = 2.0 * per * E * N * K / (gms * 1e-3) * 1e-12
                del wg
            except Exception as e:  # an optional peer: say why it is absent
                entry["grouped_mm_error"] = str(e).splitlines()[0][:200]
        if problem.get("dtype") == "fp8" and per > 0:
            try:
                if not hasattr(torch, "_scaled_mm"):
                    raise RuntimeError(f"torch {torch.__version__} has no _scaled_mm")
                entry["scaled_mm_tflops"] = scaled_mm_blockwise(torch, per, N, K, E, a.iters)
            except Exception as e:  # the 1x128/128x128 recipe is new in torch: say why it is absent
                entry["scaled_mm_error"] = str(e).splitlines()[0][:200]
        peers[t["id"]] = entry
        print(f"{t['id']}: {entry['name']} [{M}x{K}]x[{K}x{N}] {entry['tflops']:.0f} TFLOP/s")
        del x, w
        torch.cuda.empty_cache()
    with open(os.path.join(a.dir, "peers.json"), "w") as f:
        json.dump({"schema": "moebench/peers@1", "command": " ".join(sys.argv), "peers": peers}, f, indent=1)


if __name__ == "__main__":
    main()
