"""`moebench sweep gmm --backend vllm` end to end through the binary, without a GPU: the engine's
Triton fused_moe kernel under Triton's interpreter (f16: the interpreter's bf16 tl.dot is wrong).

Which kernel runs: vLLM's own fused_moe_kernel, read from the vllm package's fused_moe.py, where
a vllm package is on PYTHONPATH (only that file is read; vllm itself is never imported);
otherwise moebench's stand-in with vLLM's calling convention (python/moebench/peers/standin.py).
Each test's first line of output says which (`kernel_used`). The broken-candidate test always uses
the stand-in's broken variant (MOEBENCH_PEERS_KERNEL=standin-broken)."""

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CONFIG_KEYS = ["BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages"]
PROBLEM = ["--experts", "4", "--topk", "2", "--hidden", "64", "--intermediate", "32", "--dtype", "f16"]
SPACE = [
    {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 2},
    {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 16, "num_warps": 8, "num_stages": 3},
    {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 4},
]
QUICK = ["--strategy", "exhaustive", "--min-samples", "2", "--min-time", "0s", "--max-time", "5s",
         "--watchdog", "120s", "--progress", "quiet"]


def exe():
    e = os.environ.get("MOEBENCH_EXE")
    if not e:
        pytest.skip("MOEBENCH_EXE is not set (ctest sets it to the built moebench)")
    return e


def needs_triton():
    for m in ("torch", "triton"):
        if importlib.util.find_spec(m) is None:
            pytest.skip(f"{m} is not importable: the engine backends run where torch and triton are installed")
    if not (HERE.parents[1] / "python" / "moebench" / "_peers.so").is_file() and not os.environ.get("MOEBENCH_PEERS_LIBRARY"):
        pytest.skip("the engine worker's FFI module python/moebench/_peers.so is not built")


def engine_env(kernel=None, **extra):
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env["MOEBENCH_PYTHON"] = sys.executable
    if kernel is None:
        kernel = "" if importlib.machinery.PathFinder.find_spec("vllm", sys.path) else "standin"
    if kernel:
        env["MOEBENCH_PEERS_KERNEL"] = kernel
    else:
        env.pop("MOEBENCH_PEERS_KERNEL", None)
    env.update(extra)
    return env


def kernel_used(env):
    return "the stand-in" if env.get("MOEBENCH_PEERS_KERNEL") else "vLLM's fused_moe_kernel"


def sweep(tmp_path, name, env, *more, tokens="4", space=SPACE):
    space_file = tmp_path / f"{name}-space.json"
    space_file.write_text(json.dumps(space))
    out = tmp_path / name
    cmd = [exe(), "sweep", "gmm", "--backend", "vllm", *PROBLEM, "--tokens", tokens, "--space", str(space_file),
           "--out", str(out), *QUICK, *more]
    print("kernel used:", kernel_used(env), "|", " ".join(cmd))
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900), out


def has_engine(engine):
    return importlib.machinery.PathFinder.find_spec(engine, sys.path) is not None


def engine_read_back(engine, folder, res, experts, inter, fp8=False, down=False):
    """The engine's own get_moe_configs (its source, run by moebench.peers.loader) on `folder`."""
    from moebench.peers import loader

    meta = res["meta"]
    return loader.read_back(engine, folder, experts, inter, meta["device"].split(":")[0], meta["engine_info"]["triton"],
                            fp8=fp8, down=down)


def read_vllm_config(path, res=None, experts=None, inter=None):
    """vLLM's own loader where the vllm package is on the path, else the format get_moe_configs
    documents: triton_version dropped, every other key a token count as a string, each value the
    six config keys."""
    if has_engine("vllm") and res is not None:
        table = engine_read_back("vllm", Path(path).parent, res, experts, inter)
        assert table is not None, f"vLLM's get_moe_configs did not find {path}"
        return table, "vLLM's get_moe_configs"
    data = json.loads(Path(path).read_text())
    assert isinstance(data.pop("triton_version"), str)
    table = {}
    for key, value in data.items():
        assert key == str(int(key)), key
        assert list(value) == CONFIG_KEYS, value
        assert all(isinstance(v, int) for v in value.values()), value
        table[int(key)] = value
    return table, "plain reader"


def records(out):
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    """One sweep of two token counts under the interpreter, shared by the tests that read it (each
    sweep starts the engine's worker, torch and all, and runs every candidate under the
    interpreter: tens of seconds). The tests copy what they change."""
    needs_triton()
    tmp = tmp_path_factory.mktemp("peers-e2e")
    env = engine_env()
    r, out = sweep(tmp, "e2e", env, "--engine-config", str(tmp / "cfg"), tokens="2,4")
    assert r.returncode == 0, r.stdout + r.stderr
    return r, out, tmp / "cfg", env


def test_sweep_under_the_interpreter_writes_vllms_file(e2e):
    r, out, cfg, _ = e2e
    res = records(out)
    assert res["meta"]["timer"]["mode"] == "triton-interpreter"
    assert res["meta"]["engine"] == "vllm"
    ok = [x for x in res["records"] if x["status"] == "ok"]
    assert ok and all(x["timer"] == "triton-interpreter" and x["stats"]["n"] >= 2 for x in ok)
    assert all(x["validation"]["ok"] for x in ok)
    files = sorted(cfg.glob("E=*.json"))
    assert [f.name for f in files] == ["E=4,N=32,device_name=cpu.json"], files
    table, how = read_vllm_config(files[0], res, 4, 32)
    print("engine config read by", how)
    assert sorted(table) == [2, 4]
    chosen = {p["tokens"]: p["chosen"]["config"] for p in res["points"]}
    for m, cfg_m in table.items():
        assert cfg_m == {k: chosen[m][k] for k in CONFIG_KEYS}
    assert list((cfg / "moebench-tables").rglob("*.json"))
    assert "engine config: " in r.stdout and "Triton's interpreter" in r.stdout


def test_a_wrong_candidate_is_refused_not_timed(tmp_path):
    needs_triton()
    env = engine_env("standin-broken")  # BLOCK_SIZE_K=128 skips its last K step
    r, out = sweep(tmp_path, "broken", env)
    assert r.returncode == 0, r.stdout + r.stderr
    by_k = {}
    for x in records(out)["records"]:
        by_k.setdefault(x["config"]["BLOCK_SIZE_K"], []).append(x)
    assert by_k[128] and all(x["status"] == "invalid" and not x["validation"]["ok"] for x in by_k[128])
    assert all(not x["stats"] or x["stats"].get("n", 0) == 0 for x in by_k[128]), by_k[128]
    assert by_k[64] and all(x["status"] == "ok" and x["stats"]["n"] >= 2 for x in by_k[64])
    (p,) = records(out)["points"]
    assert p["chosen"]["config"]["BLOCK_SIZE_K"] == 64


def test_resume_measures_only_what_is_missing(e2e, tmp_path):
    _, done, _, env = e2e
    out = tmp_path / "resume"
    shutil.copytree(done, out)
    journal = out / "journal.jsonl"
    lines = [json.loads(l) for l in journal.read_text().splitlines()]
    first = [l for l in lines if l.get("type") == "eval" and l.get("point_index") == 0]
    # Cut the journal after the first point: the second was never measured.
    assert first and any(l.get("point_index") == 1 for l in lines)
    journal.write_text("".join(json.dumps(l) + "\n" for l in lines if l.get("point_index", 0) == 0))
    (out / "results.json").unlink()
    # The same command as the shared sweep's, with --resume and the copied folder.
    space_file = tmp_path / "e2e-space.json"
    space_file.write_text(json.dumps(SPACE))
    cmd = [exe(), "sweep", "gmm", "--backend", "vllm", *PROBLEM, "--tokens", "2,4", "--space", str(space_file),
           "--out", str(out), *QUICK, "--resume"]
    r2 = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert r2.returncode == 0, r2.stdout + r2.stderr
    after = [json.loads(l) for l in journal.read_text().splitlines()]
    assert [l for l in after if l.get("type") == "eval" and l.get("point_index") == 0] == first
    assert any(l.get("type") == "eval" and l.get("point_index") == 1 for l in after)
    assert sorted(p["tokens"] for p in records(out)["points"]) == [2, 4]


def refused(r, *says):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = [l for l in r.stderr.splitlines() if l.startswith("moebench: error:")]
    assert len(lines) == 1, r.stderr
    for s in says:
        assert s in lines[0], lines[0]


def test_an_engine_that_is_not_importable_is_one_line_exit_2(tmp_path):
    needs_triton()
    env = engine_env("")
    # A path without any vllm package: python/ and the folders torch and triton came from.
    import torch
    import triton

    keep = [str(HERE.parents[1] / "python"), str(Path(torch.__file__).parents[1]), str(Path(triton.__file__).parents[1])]
    keep += [p for p in env.get("PYTHONPATH", "").split(":") if "tvm" in p or p.endswith(".deps/python")]
    env["PYTHONPATH"] = ":".join(p for p in keep if not (Path(p) / "vllm").exists())
    r, _ = sweep(tmp_path, "missing", env)
    refused(r, "--backend vllm", "vllm package is not on PYTHONPATH")


def test_sglang_sweep_writes_its_layout(tmp_path):
    """SGLang's own fused_moe_kernel where an sglang package is on PYTHONPATH, else the stand-in."""
    needs_triton()
    env = engine_env("" if importlib.machinery.PathFinder.find_spec("sglang", sys.path) else "standin")
    space_file = tmp_path / "s.json"
    space_file.write_text(json.dumps(SPACE[:2]))  # BLOCK_SIZE_M=32 pads the 16-aligned segments again
    cmd = [exe(), "sweep", "gmm", "--backend", "sglang", *PROBLEM, "--stage", "up,down", "--tokens", "4", "--space",
           str(space_file), "--out", str(tmp_path / "sg"), "--engine-config", str(tmp_path / "cfg"), *QUICK]
    print("kernel used:", "the stand-in" if env.get("MOEBENCH_PEERS_KERNEL") else "SGLang's fused_moe_kernel")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    res = records(tmp_path / "sg")
    assert res["meta"]["engine"] == "sglang" and all(x["status"] == "ok" for x in res["records"]), res["records"]
    triton = res["meta"]["engine_info"]["triton"].replace(".", "_")
    folder = tmp_path / "cfg" / "configs" / f"triton_{triton}"
    names = sorted(f.name for f in folder.glob("*.json"))
    assert names == ["E=4,N=32,device_name=cpu.json", "E=4,N=32,device_name=cpu_down.json"], names
    for f in names:
        # SGLang's get_moe_configs: {int(key): val for key, val in json.load(f).items()}
        table = {int(key): val for key, val in json.loads((folder / f).read_text()).items()}
        assert list(table) == [4] and list(table[4]) == CONFIG_KEYS


def test_an_engine_without_its_package_is_one_line_exit_2_sglang(tmp_path):
    needs_triton()
    env = engine_env("")
    import torch
    import triton

    keep = [str(HERE.parents[1] / "python"), str(Path(torch.__file__).parents[1]), str(Path(triton.__file__).parents[1])]
    keep += [p for p in env.get("PYTHONPATH", "").split(":") if "tvm" in p or p.endswith(".deps/python")]
    env["PYTHONPATH"] = ":".join(p for p in keep if not (Path(p) / "sglang").exists())
    space_file = tmp_path / "s.json"
    space_file.write_text(json.dumps(SPACE))
    r = subprocess.run([exe(), "sweep", "gmm", "--backend", "sglang", *PROBLEM, "--tokens", "4", "--space", str(space_file),
                        "--out", str(tmp_path / "sg"), *QUICK], capture_output=True, text=True, env=env)
    refused(r, "--backend sglang", "sglang package is not on PYTHONPATH")


def test_bf16_under_the_interpreter_and_misplaced_flags_are_refused(tmp_path):
    cmd = [exe(), "sweep", "gmm", "--backend", "vllm", "--model", "qwen3-30b-a3b", "--tokens", "4", "--out", str(tmp_path / "b")]
    refused(subprocess.run(cmd, capture_output=True, text=True, env=engine_env()), "--dtype f16")
    refused(subprocess.run([exe(), "sweep", "gmm", "--backend", "cpu", *PROBLEM, "--tokens", "4", "--engine-config",
                            str(tmp_path / "c"), "--out", str(tmp_path / "x")], capture_output=True, text=True),
            "--engine-config")
    refused(subprocess.run([exe(), "sweep", "router", "--backend", "vllm", "--tokens", "4", "--out", str(tmp_path / "r")],
                           capture_output=True, text=True, env=engine_env()), "gmm")


FP8 = ["--experts", "4", "--topk", "2", "--hidden", "128", "--intermediate", "128", "--dtype", "fp8", "--stage", "up,down"]
# With the default (vLLM's fp8 rule at 4 tokens: BLOCK_SIZE_M=16, BLOCK_SIZE_N=64, the kernel's
# swapped-operand path on sm_90) two candidates per stage: two K steps per scale block here.
FP8_SPACE = [{"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 3}]


def fp8_sweep(tmp_path, engine, *more):
    needs_triton()
    if not has_engine(engine):
        pytest.skip(f"the {engine} package is not on PYTHONPATH (scripts/setup.sh unpacks its kernel): the stand-in has no fp8 path")
    env = engine_env("")
    space_file = tmp_path / "fp8-space.json"
    space_file.write_text(json.dumps(FP8_SPACE))
    out, cfg = tmp_path / "fp8", tmp_path / "cfg"
    cmd = [exe(), "sweep", "gmm", "--backend", engine, *FP8, "--tokens", "4", "--space", str(space_file), "--out", str(out),
           "--engine-config", str(cfg), *QUICK, *more]
    print("kernel used:", engine, "fused_moe_kernel (use_fp8_w8a8, block_shape [128, 128]) |", " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    res = records(out)
    recs = res["records"]
    # Every candidate of both stages validated (h codes and scales by DESIGN's fp8 rule) and timed.
    assert len(recs) == 4 and all(x["status"] == "ok" and x["validation"]["ok"] for x in recs), recs
    assert sum(x["is_default"] for x in recs) == 2
    assert {x["problem"]["stage"] for x in recs} == {"up", "down"}
    return res, cfg


def test_fp8_block_scaled_sweep_is_read_back_by_vllms_loader(tmp_path):
    res, cfg = fp8_sweep(tmp_path, "vllm")
    files = sorted(f.name for f in cfg.glob("E=*.json"))
    assert files == ["E=4,N=128,device_name=cpu,dtype=fp8_w8a8,block_shape=[128,128].json"], files
    table = engine_read_back("vllm", cfg, res, 4, 128, fp8=True)
    up = next(p for p in res["points"] if p["axes"]["stage"] == "up")
    assert table == {4: {k: up["chosen"]["config"][k] for k in CONFIG_KEYS}}


def test_fp8_ue8m0_sweep_is_read_back_by_sglangs_loader(tmp_path):
    res, cfg = fp8_sweep(tmp_path, "sglang", "--scale-fmt", "ue8m0")
    chosen = {p["axes"]["stage"]: {k: p["chosen"]["config"][k] for k in CONFIG_KEYS} for p in res["points"]}
    assert engine_read_back("sglang", cfg, res, 4, 128, fp8=True) == {4: chosen["up"]}
    assert engine_read_back("sglang", cfg, res, 4, 128, fp8=True, down=True) == {4: chosen["down"]}
