"""scripts/check_targets.py judging "ours >= the best peer" (vs_best_peer) from the side-by-side
fields of results.json: met, missed, and not judged where the sweep measured no peer; a
published figure stands in only with its source, and is marked published."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_targets.py"


def point(tokens, ours_us, peer_us=None, peer="cuBLAS"):
    s = {"ours": {"config": {"block_m": 64}, "config_key": "block_m=64", "median_us": ours_us}, "peer": None,
         "peer_over_ours": None}
    if peer_us is None:
        s["note"] = "no peer measured"
    else:
        s["peer"] = {"name": peer, "config": {"lib": 1}, "config_key": "lib=1", "median_us": peer_us, "backend": "cuda"}
        s["peer_over_ours"] = peer_us / ours_us
    return {"kernel": "gmm", "problem_key": "p", "tokens": tokens, "side_by_side": s}


def write_sweep(path, points):
    path.mkdir(parents=True)
    doc = {"schema": "moebench/results@1", "meta": {"device": "test"}, "records": [], "points": points}
    (path / "results.json").write_text(json.dumps(doc))


def judge(tmp_path, targets, sweeps, extra=()):
    for tid, points in sweeps.items():
        write_sweep(tmp_path / "out" / tid / "0", points)
    spec = tmp_path / "targets.json"
    spec.write_text(json.dumps({"schema": "moebench/targets@1", "targets": targets}))
    r = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "out"), "--targets", str(spec), *extra],
                       capture_output=True, text=True)
    out = tmp_path / "out" / "targets-report.json"
    report = json.loads(out.read_text()) if out.exists() else None
    return r, {row["id"]: row for row in report["targets"]} if report else {}


def target(tid, tokens, **kw):
    return {"id": tid, "issue": "peers", "name": tid, "sweeps": [["gmm", "--stage", "up"]], "tokens": tokens,
            "metric": "vs_best_peer", "min": 1.0, **kw}


def test_met_missed_and_unjudged(tmp_path):
    r, rows = judge(tmp_path, [target("met", [1, 16]), target("missed", [1, 16]), target("peerless", 8192),
                               target("partly", [1, 16])],
                    {"met": [point(1, 2.0, 3.0), point(16, 4.0, 4.4)],             # 1.5x, 1.1x
                     "missed": [point(1, 2.0, 3.0), point(16, 4.0, 3.0, "vLLM Triton")],  # 0.75x at T=16
                     "peerless": [point(8192, 100.0)],
                     "partly": [point(1, 2.0, 3.0), point(16, 4.0)]})
    assert r.returncode == 0, r.stdout + r.stderr
    assert rows["met"]["met"] is True
    assert rows["met"]["value"] == pytest.approx(1.1)
    assert "cuBLAS 4.40 us vs ours 4.00 us, measured in the same sweep" in rows["met"]["detail"]
    assert rows["met"]["configs"] == ["block_m=64", "lib=1"]
    assert rows["missed"]["met"] is False
    assert rows["missed"]["value"] == pytest.approx(0.75)
    assert "vLLM Triton" in rows["missed"]["detail"]
    assert rows["peerless"]["met"] is None
    assert rows["peerless"]["value"] is None
    assert "not judged: no peer measured at tokens=8192" in rows["peerless"]["detail"]
    # Measured at one token count and met there: not judged as a whole, the missing count named.
    assert rows["partly"]["met"] is None
    assert "not judged at 1 of 2 token counts (T=16: not judged: no peer measured" in rows["partly"]["detail"]
    assert ">= 1.0x" in r.stdout and "1.10x" in r.stdout
    assert not any(row["published"] for row in rows.values())


def test_a_published_figure_is_marked_and_needs_its_source(tmp_path):
    published = {"peer": "SGLang Triton", "us": 150.0, "source": "https://example.org/bench"}
    r, rows = judge(tmp_path, [target("pub", 8192, published=published)], {"pub": [point(8192, 100.0)]})
    assert r.returncode == 0, r.stdout + r.stderr
    assert rows["pub"]["met"] is True
    assert rows["pub"]["value"] == pytest.approx(1.5)
    assert rows["pub"]["published"] is True
    assert "PUBLISHED figure, not measured here" in rows["pub"]["detail"]
    assert "source: https://example.org/bench" in rows["pub"]["detail"]
    # A peer measured in the sweep is preferred to the published figure.
    r, rows = judge(tmp_path / "again", [target("pub", 8192, published=published)], {"pub": [point(8192, 100.0, 90.0)]})
    assert rows["pub"]["value"] == pytest.approx(0.9)
    assert rows["pub"]["published"] is False
    # Without its source a published figure is refused.
    r, _ = judge(tmp_path / "nosource", [target("pub", 8192, published={"us": 150.0})], {"pub": [point(8192, 100.0)]})
    assert r.returncode != 0
    assert "needs its us and its source" in r.stderr


def test_results_without_side_by_side_are_not_judged(tmp_path):
    old = point(1, 2.0)
    del old["side_by_side"]
    r, rows = judge(tmp_path, [target("old", 1)], {"old": [old]})
    assert r.returncode == 0, r.stdout + r.stderr
    assert rows["old"]["met"] is None
    assert "no side-by-side fields" in rows["old"]["detail"]


def test_ours_against_an_engines_own_sweep(tmp_path):
    """vs_engine: the engine's sweep (the second) over ours (the first), per token count, the
    worst counting; a token count that either sweep has no valid record at is not judged."""
    def sweep(path, times, engine=None):
        path.mkdir(parents=True)
        recs = [{"kernel": "moe-layer", "tokens": t, "status": "ok", "validation": {"ok": True},
                 "stats": {"median_us": us}, "config_key": f"k{us}"} for t, us in times.items()]
        # An invalid record faster than everything: never the best.
        recs.append({"kernel": "moe-layer", "tokens": 1, "status": "invalid", "validation": {"ok": False},
                     "stats": {"median_us": 0.01}, "config_key": "bad"})
        meta = {"device": "test", **({"engine": engine} if engine else {})}
        (path / "results.json").write_text(json.dumps({"schema": "moebench/results@1", "meta": meta, "records": recs,
                                                       "points": []}))

    out = tmp_path / "out"
    sweep(out / "met" / "0", {1: 20.0, 16: 50.0})
    sweep(out / "met" / "1", {1: 40.0, 16: 60.0}, "vllm")
    sweep(out / "missed" / "0", {1: 20.0})
    sweep(out / "missed" / "1", {1: 10.0}, "sglang")
    sweep(out / "half" / "0", {1: 20.0, 16: 50.0})
    sweep(out / "half" / "1", {1: 40.0}, "vllm")
    targets = [{"id": i, "issue": "peers", "name": i, "sweeps": [["moe-layer"], ["moe-layer", "--backend", "vllm"]],
                "tokens": tok, "metric": "vs_engine", "min": 1.0}
               for i, tok in (("met", [1, 16]), ("missed", 1), ("half", [1, 16]))]
    spec = tmp_path / "targets.json"
    spec.write_text(json.dumps({"schema": "moebench/targets@1", "targets": targets}))
    r = subprocess.run([sys.executable, str(SCRIPT), str(out), "--targets", str(spec)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {row["id"]: row for row in json.loads((out / "targets-report.json").read_text())["targets"]}
    assert rows["met"]["met"] is True and rows["met"]["value"] == pytest.approx(1.2)  # 60/50 at T=16, the worse
    assert "vllm 60.00 us vs ours 50.00 us" in rows["met"]["detail"]
    assert rows["met"]["configs"] == ["k50.0", "k60.0"]
    assert rows["missed"]["met"] is False and rows["missed"]["value"] == pytest.approx(0.5)
    assert "sglang" in rows["missed"]["detail"]
    assert rows["half"]["met"] is None and "T=16" in rows["half"]["detail"]


def test_an_anchor_is_printed_beside_the_measurement_and_judges_nothing(tmp_path):
    out = tmp_path / "out" / "tf" / "0"
    out.mkdir(parents=True)
    rec = {"kernel": "gmm", "tokens": 8192, "status": "ok", "validation": {"ok": True}, "stats": {"median_us": 100.0},
           "config_key": "k", "tflops": 700.0, "gbps": 1.0}
    (out / "results.json").write_text(json.dumps({"schema": "moebench/results@1", "meta": {"device": "test"},
                                                  "records": [rec], "points": []}))
    anchor = {"peer": "DeepGEMM", "value": 1346, "where": "H800, N=4096 K=7168", "source": "its README"}
    tf = {"id": "tf", "issue": "fp8", "name": "tf", "sweeps": [["gmm"]], "tokens": 8192, "metric": "tflops", "min": 1350,
          "anchor": anchor}
    spec = tmp_path / "targets.json"
    spec.write_text(json.dumps({"schema": "moebench/targets@1", "targets": [tf]}))
    r = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "out"), "--targets", str(spec)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    (row,) = json.loads((tmp_path / "out" / "targets-report.json").read_text())["targets"]
    assert row["met"] is False and row["value"] == pytest.approx(700.0)  # judged on ours alone
    assert row["published"] is False
    assert "published anchor, not measured here: DeepGEMM 1346 TFLOP/s (H800, N=4096 K=7168; source: its README)" in row["detail"]
    # An anchor without its source is refused.
    del anchor["source"]
    spec.write_text(json.dumps({"schema": "moebench/targets@1", "targets": [tf]}))
    r = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "out"), "--targets", str(spec)], capture_output=True, text=True)
    assert r.returncode != 0 and "an anchor needs" in r.stderr


def layer_record(tokens, alone_us, graph=None, pdl=1):
    r = {"kernel": "moe-layer", "tokens": tokens, "status": "ok", "validation": {"ok": True}, "config_key": f"pdl={pdl}",
         "stats": {"median_us": alone_us}, "timing": "alone", "pdl": pdl}
    if graph is not None:
        r["graph"] = graph
    return r


def graph_ok(us, calls=10):
    return {"timing": "graph", "graph_calls": calls, "status": "ok", "timer": "graph", "stats": {"median_us": us}}


def judge_records(tmp_path, targets, sweeps):
    for tid, records in sweeps.items():
        path = tmp_path / "out" / tid / "0"
        path.mkdir(parents=True)
        doc = {"schema": "moebench/results@1", "meta": {"device": "test"}, "records": records, "points": []}
        (path / "results.json").write_text(json.dumps(doc))
    spec = tmp_path / "targets.json"
    spec.write_text(json.dumps({"schema": "moebench/targets@1", "targets": targets}))
    r = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "out"), "--targets", str(spec)],
                       capture_output=True, text=True)
    report = json.loads((tmp_path / "out" / "targets-report.json").read_text())
    return r, {row["id"]: row for row in report["targets"]}


def graph_target(tid, tokens, bound, **kw):
    return {"id": tid, "issue": 36, "name": tid, "sweeps": [["moe-layer"]], "tokens": tokens, "metric": "graph_us",
            "max": bound, **kw}


def test_graph_us_judges_the_graph_timed_number_with_a_published_figure_beside_it(tmp_path):
    anchor = {"peer": "vLLM Triton", "value": 40.4, "where": "H100", "source": "vLLM benchmark_moe"}
    refused = {"timing": "graph", "graph_calls": 10, "status": "not capturable", "reason": "a stage waits on the host",
               "stats": None}
    cpu = {"timing": "graph", "graph_calls": 10, "status": "not applicable", "reason": "the cpu backend has no graphs",
           "stats": None}
    r, rows = judge_records(
        tmp_path,
        [graph_target("met", 1, 20, anchor=anchor), graph_target("missed", [1, 16], 20),
         graph_target("cpu", 1, 20), graph_target("old", 1, 20)],
        {"met": [layer_record(1, 40.0, graph_ok(25.0), 1), layer_record(1, 45.0, graph_ok(18.0), 0),
                 layer_record(1, 10.0, refused, 1)],  # fastest alone, but not graph-timed: not the judged one
         "missed": [layer_record(1, 40.0, graph_ok(19.0)), layer_record(16, 90.0, graph_ok(60.0))],
         "cpu": [layer_record(1, 900.0, cpu)],
         "old": [layer_record(1, 40.0)]})
    assert r.returncode == 0, r.stdout + r.stderr
    met = rows["met"]
    assert met["met"] is True
    assert met["value"] == pytest.approx(18.0)  # the graph-timed figure, not the time alone
    assert met["configs"] == ["pdl=0"]
    assert "timing=graph: 10 calls in one CUDA graph" in met["detail"] and "alone 45.0 us" in met["detail"]
    assert "published anchor, not measured here: vLLM Triton 40.4 us (H100; source: vLLM benchmark_moe)" in met["detail"]
    assert met["published"] is False
    assert rows["missed"]["met"] is False
    assert rows["missed"]["value"] == pytest.approx(60.0)
    assert "worst at T=16" in rows["missed"]["detail"]
    assert rows["cpu"]["met"] is None
    assert "not applicable: the cpu backend has no graphs" in rows["cpu"]["detail"]
    assert rows["old"]["met"] is None
    assert "no graph timing" in rows["old"]["detail"]
    assert "18.0 us" in r.stdout
