"""scripts/plot.py with peers: the time plot's series of the best of ours and the best peer come
from results.json's side_by_side, the peer's name in its label; without peers there is no peer
series (and the plot says "no peer measured")."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "plot.py"


def load_plot():
    spec = importlib.util.spec_from_file_location("moebench_plot", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def record(tokens, key, us, peer=None):
    r = {"kernel": "gmm", "problem_key": "p", "problem": {"stage": "up"}, "tokens": tokens, "config_key": key,
         "config": {"k": key}, "status": "ok", "is_default": key == "ours-a",
         "stats": {"median_us": us, "q1_us": us * 0.99, "q3_us": us * 1.01}, "gbps": 1.0}
    if peer:
        r["peer"] = peer
    return r


def results(with_peer):
    recs, points = [], []
    for t, (a, b, c) in {1: (3.0, 2.0, 4.0), 16: (6.0, 5.0, 4.0)}.items():
        recs += [record(t, "ours-a", a), record(t, "ours-b", b)]
        if with_peer:
            recs.append(record(t, "lib", c, "cuBLAS"))
        ours = {"config_key": "ours-b", "median_us": b, "config": {}}
        s = {"ours": ours, "peer": None, "peer_over_ours": None, "note": "no peer measured"}
        if with_peer:
            s = {"ours": ours, "peer": {"name": "cuBLAS", "config_key": "lib", "median_us": c, "config": {}},
                 "peer_over_ours": c / b}
        points.append({"kernel": "gmm", "problem_key": "p", "tokens": t, "side_by_side": s,
                       "chosen": {"config_key": "ours-b" if b < c or not with_peer else "lib", "median_us": min(b, c)}})
    return {"schema": "moebench/results@1", "meta": {"device": "test", "backend": "cpu"}, "records": recs,
            "points": points}


def test_series_of_ours_and_the_best_peer():
    plot = load_plot()
    group = plot.group_records(results(True))[("gmm", "p")]
    assert group.peer_names() == ["cuBLAS"]
    assert group.side_record(16, "peer")["config_key"] == "lib"
    assert group.side_record(1, "ours")["config_key"] == "ours-b"


def test_no_peer_no_peer_series():
    plot = load_plot()
    group = plot.group_records(results(False))[("gmm", "p")]
    assert group.peer_names() == []
    assert group.side_record(1, "peer") is None


@pytest.mark.parametrize("with_peer", [True, False])
def test_plots_render(tmp_path, with_peer):
    plot = load_plot()
    try:
        plot.setup_matplotlib()
    except SystemExit:
        pytest.skip("matplotlib is not importable")
    f = tmp_path / "results.json"
    f.write_text(json.dumps(results(with_peer)))
    assert plot.main([str(f), "--out", str(tmp_path / "png")]) == 0
    names = sorted(p.name for p in (tmp_path / "png").iterdir())
    assert "time-gmm.png" in names and "space-gmm-t16.png" in names


def test_time_plot_series_hold_the_peer(tmp_path):
    plot = load_plot()
    try:
        plot.setup_matplotlib()
    except SystemExit:
        pytest.skip("matplotlib is not importable")
    for with_peer in (True, False):
        doc = results(with_peer)
        group = plot.group_records(doc)[("gmm", "p")]
        data = plot.Plotter(doc, str(tmp_path), 60).series(group, lambda r: (r["stats"]["median_us"],) * 3)
        assert data["peer"][:2] == (([1, 16], [4.0, 4.0]) if with_peer else ([], []))
        assert data["ours"][:2] == (([1, 16], [2.0, 5.0]) if with_peer else ([], []))
