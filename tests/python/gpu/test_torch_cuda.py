"""GPU suite (ctest label gpu): torch CUDA tensors through every op on the caller's stream, and
the layer captured in a CUDA graph. Skipped without torch or a visible GPU."""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device is visible", allow_module_level=True)

import moebench  # noqa: E402
import moebench.torch as mt  # noqa: E402

T, E, k, D, I, A = 64, 8, 2, 256, 128, 16
SHAPE = {"experts": E, "topk": k, "hidden": D}
dev = torch.device("cuda", 0)


def gen(*shape, dtype=torch.bfloat16, scale=1.0):
    return (torch.randn(*shape, device=dev) * scale).to(dtype)


def test_every_op_on_a_side_stream_matches_the_layer():
    torch.manual_seed(0)
    logits, x = gen(T, E, dtype=torch.float32), gen(T, D)
    w13, w2 = gen(E, 2 * I, D, scale=0.05), gen(E, D, I, scale=0.05)
    router = moebench.Kernel("router", {"experts": E, "topk": k})
    disp = moebench.Kernel("dispatch", {**SHAPE, "align": A})
    up = moebench.Kernel("gmm", {**SHAPE, "intermediate": I, "align": A, "stage": "up"})
    down = moebench.Kernel("gmm", {**SHAPE, "intermediate": I, "align": A, "stage": "down"})
    comb = moebench.Kernel("combine", {**SHAPE, "align": A})
    R = disp.max_rows(T)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        w, ids = torch.full((T, k), float("nan"), device=dev), torch.full((T, k), -1, dtype=torch.int32, device=dev)
        mt.router(router, logits, None, w, ids)
        offsets = torch.empty(E + 1, dtype=torch.int32, device=dev)
        src, dst = torch.empty(R, dtype=torch.int32, device=dev), torch.empty(T * k, dtype=torch.int32, device=dev)
        xs = torch.zeros(R, D, dtype=torch.bfloat16, device=dev)
        ws = torch.empty(max(1, disp.workspace_bytes(T), up.workspace_bytes(T), down.workspace_bytes(T)),
                         dtype=torch.uint8, device=dev)
        mt.dispatch(disp, x, ids, offsets, src, dst, xs, ws)
        h = torch.zeros(R, I, dtype=torch.bfloat16, device=dev)
        mt.gmm_up(up, T, xs, offsets, w13, h, ws)
        y = torch.zeros(R, D, dtype=torch.bfloat16, device=dev)
        mt.gmm_down(down, T, h, offsets, w2, None, y, ws)
        out = torch.full((T, D), float("nan"), dtype=torch.bfloat16, device=dev)
        mt.combine(comb, y, dst, w, out)
    side.synchronize()
    used = int(offsets[-1])
    ref = torch.zeros(T, D, dtype=torch.float64, device=dev)
    for t in range(T):
        for j in range(k):
            e = int(ids[t, j])
            a = x[t].double() @ w13[e].double().T
            hh = torch.nn.functional.silu(a[:I]) * a[I:]
            ref[t] += w[t, j].double() * (hh @ w2[e].double().T)
    assert used <= R and not torch.isnan(out.float()).any()
    rel = (out.double() - ref).norm() / ref.norm()
    assert rel < 2e-2, rel


def test_the_layer_replays_in_a_cuda_graph():
    torch.manual_seed(1)
    layer = moebench.Kernel("moe-layer", {**SHAPE, "intermediate": I})
    logits, x = gen(T, E), gen(T, D)  # the layer's logits are in the activations' dtype
    w13, w2 = gen(E, 2 * I, D, scale=0.05), gen(E, D, I, scale=0.05)
    ws = torch.empty(layer.workspace_bytes(T), dtype=torch.uint8, device=dev)
    eager = torch.empty(T, D, dtype=torch.bfloat16, device=dev)
    mt.moe_layer(layer, logits, None, x, w13, w2, eager, ws)
    torch.cuda.synchronize()
    out = torch.full((T, D), float("nan"), dtype=torch.bfloat16, device=dev)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        mt.moe_layer(layer, logits, None, x, w13, w2, out, ws)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, eager, rtol=0, atol=0)
