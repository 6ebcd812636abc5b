"""`moebench sweep moe-layer --backend vllm|sglang`: the layer as the engine runs it (moebench's
router, then the engine's fused_moe kernel for up over the tokens with top_k = K, silu*up, the
kernel for down with the routed weights, the sum over each token's slots), validated against
moebench's fp64 layer reference, under Triton's interpreter. Which kernel runs is printed first,
as in test_peers.py: the engine's own where its package is on PYTHONPATH, else the stand-in."""

import json
import subprocess

import pytest

from test_peers import (CONFIG_KEYS, QUICK, SPACE, engine_env, engine_read_back, exe, has_engine, kernel_used,
                        needs_triton, records)

LAYER = ["--experts", "4", "--topk", "2", "--hidden", "64", "--intermediate", "32", "--dtype", "f16"]


def layer_sweep(tmp_path, name, env, problem, space, *more, engine="vllm", tokens="4"):
    needs_triton()
    space_file = tmp_path / f"{name}-space.json"
    space_file.write_text(json.dumps(space))
    out = tmp_path / name
    cmd = [exe(), "sweep", "moe-layer", "--backend", engine, *problem, "--tokens", tokens, "--space", str(space_file),
           "--out", str(out), *QUICK, *more]
    print("kernel used:", kernel_used(env), "|", " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    return r, records(out)


def test_the_engines_layer_with_a_shared_expert_is_validated_and_written_as_its_file(tmp_path):
    env = engine_env()
    cfg = tmp_path / "cfg"
    r, res = layer_sweep(tmp_path, "layer", env, [*LAYER, "--shared", "1"], SPACE[:2], "--engine-config", str(cfg))
    recs = res["records"]
    assert len(recs) >= 2 and all(x["status"] == "ok" and x["validation"]["ok"] for x in recs), recs
    assert all(x["kernel"] == "moe-layer" and x["stats"]["n"] >= 2 for x in recs)
    # E counts the shared expert: it is one more expert of w13 for the engine.
    files = sorted(f.name for f in cfg.glob("E=*.json"))
    assert files == ["E=5,N=32,device_name=cpu.json"], files
    (p,) = res["points"]
    want = {4: {k: p["chosen"]["config"][k] for k in CONFIG_KEYS}}
    if has_engine("vllm"):
        assert engine_read_back("vllm", cfg, res, 5, 32) == want
    else:
        data = json.loads((cfg / files[0]).read_text())
        assert {int(k): v for k, v in data.items() if k != "triton_version"} == want


def test_a_wrong_kernel_in_the_layer_is_refused_not_timed(tmp_path):
    env = engine_env("standin-broken")  # BLOCK_SIZE_K=128 skips its last K step
    space = [SPACE[0], {**SPACE[2], "BLOCK_SIZE_K": 128}]
    problem = [v if v != "64" else "256" for v in LAYER]  # hidden 256: up's K takes two 128-wide steps
    _, res = layer_sweep(tmp_path, "broken", env, problem, space)
    by_k = {}
    for x in res["records"]:
        by_k.setdefault(x["config"]["BLOCK_SIZE_K"], []).append(x)
    assert by_k[128] and all(x["status"] == "invalid" and not x["validation"]["ok"] for x in by_k[128])
    assert all(not x["stats"] or x["stats"].get("n", 0) == 0 for x in by_k[128])
    assert by_k[64] and all(x["status"] == "ok" and x["validation"]["ok"] for x in by_k[64])


def test_fp8_layer_of_one_expert_parallel_rank(tmp_path):
    """Slots routed to another rank's experts go to blocks of expert -1, which the kernel zeroes."""
    if not has_engine("vllm"):
        pytest.skip("the vllm package is not on PYTHONPATH (scripts/setup.sh unpacks its kernel): the stand-in has no fp8 path")
    env = engine_env("")
    problem = ["--experts", "4", "--topk", "2", "--hidden", "128", "--intermediate", "128", "--dtype", "fp8",
               "--set", "expert_begin=1", "--set", "expert_end=3"]
    space = [{"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 3}]
    _, res = layer_sweep(tmp_path, "fp8ep", env, problem, space, tokens="8")
    recs = res["records"]
    assert recs and all(x["status"] == "ok" and x["validation"]["ok"] for x in recs), recs


def test_captured_routing_is_replayed_through_the_engines_layer(tmp_path):
    """--dist FILE.npy of captured logits (the layer routes them with its router) that send every
    token to experts 0 and 2, so the layer's
    bytes count two experts' weights (the cost follows the routing), and the engine's output is
    still validated against the reference on that routing."""
    import numpy as np

    captured = tmp_path / "logits.npy"
    np.save(captured, np.array([[5.0, -5.0, 4.0, -6.0], [3.0, -4.0, 5.0, -5.0]] * 3, dtype=np.float32))
    env = engine_env()
    _, replayed = layer_sweep(tmp_path, "replay", env, LAYER, SPACE[:1], "--dist", str(captured))
    rec = next(x for x in replayed["records"] if x["config"] == SPACE[0])
    assert rec["status"] == "ok" and rec["validation"]["ok"], rec
    tokens, hidden, inter = 4, 64, 32
    logits = tokens * 4 * 2  # f16 [T, E]
    # Two experts' weights (uniform routing at this seed reaches all four: 37,920 bytes).
    assert rec["bytes"] == 2 * 3 * inter * hidden * 2 + 2 * tokens * hidden * 2 + logits


def test_sglangs_layer_on_one_expert_parallel_rank(tmp_path):
    """SGLang's own kernel (where its package is on the path, else the stand-in) through the layer:
    top_k = K over the tokens, another rank's slots in blocks of expert -1."""
    env = engine_env("" if has_engine("sglang") else "standin")
    print("kernel used:", "SGLang's fused_moe_kernel" if has_engine("sglang") else "the stand-in")
    problem = [*LAYER, "--set", "expert_begin=2", "--set", "expert_end=4"]
    _, res = layer_sweep(tmp_path, "sglang", env, problem, SPACE[:1], engine="sglang")
    recs = res["records"]
    assert res["meta"]["engine"] == "sglang"
    assert recs and all(x["status"] == "ok" and x["validation"]["ok"] for x in recs), recs
