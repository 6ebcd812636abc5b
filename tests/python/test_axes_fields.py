"""The fields the problem-axes work added to journals and results files, given the wrong type
one at a time and read back by --resume and merge: each must be one `moebench: error:` line
naming the file, the line (journals) and the field, exit 2; never an internal error (exit 3)."""
import json
import os
import shutil
import subprocess

import pytest

SWEEP = ["sweep", "router", "--experts", "8,12,16", "--groups", "4", "--topk_group", "2", "--topk", "2",
         "--tokens", "1,4", "--backend", "cpu", "--tables", "none", "--progress", "quiet"]


def exe():
    e = os.environ.get("MOEBENCH_EXE")
    if not e:
        pytest.skip("MOEBENCH_EXE is not set (ctest sets it to the built moebench)")
    return e


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    d = tmp_path_factory.mktemp("axes") / "done"
    subprocess.run([exe()] + SWEEP + ["--out", str(d)], check=True, capture_output=True)
    return d


def refused(cmd, *says):
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = [l for l in r.stderr.splitlines() if l.startswith("moebench: error:")]
    assert len(lines) == 1, r.stderr
    for s in says:
        assert s in lines[0], lines[0]


def edited(sweep, tmp_path, name, edit_line, drop_results=False):
    d = tmp_path / name
    shutil.copytree(sweep, d)
    lines = (d / "journal.jsonl").read_text().splitlines()
    out, done = [], False
    for i, l in enumerate(lines):
        j = json.loads(l)
        if not done and edit_line(i, j):
            done = True
        out.append(json.dumps(j))
    assert done
    (d / "journal.jsonl").write_text("\n".join(out) + "\n")
    if drop_results:
        (d / "results.json").unlink()
    return d


@pytest.mark.parametrize("axes", [[{"name": "experts", "values": [8, 12, 16]}], "x", [1, 2], {},
                                  [{"name": 3, "values": ["8"]}]])
def test_header_plan_axes_of_another_type(sweep, tmp_path, axes):
    def edit(i, j):
        if i != 0:
            return False
        j["plan"]["axes"] = axes
        return True
    d = edited(sweep, tmp_path, "plan", edit)
    refused([exe()] + SWEEP + ["--out", str(d), "--resume"], "journal.jsonl line 1", "plan is")
    refused([exe(), "merge", str(d), "--out", str(tmp_path / "m")], "journal.jsonl line 1", "plan is")


@pytest.mark.parametrize("skipped", [1, [1], None, {}, "x", 1.5])
def test_a_points_skipped_of_another_type(sweep, tmp_path, skipped):
    def edit(i, j):
        if j.get("type") != "point":
            return False
        j["skipped"] = skipped
        return True
    d = edited(sweep, tmp_path, "skipped", edit, drop_results=True)
    refused([exe(), "merge", str(d), "--out", str(tmp_path / "m")], "journal.jsonl line", "skipped is")


@pytest.mark.parametrize("where", ["journal", "results"])
def test_a_points_axes_value_of_another_type(sweep, tmp_path, where):
    if where == "journal":
        def edit(i, j):
            if j.get("type") != "point" or "axes" not in j:
                return False
            j["axes"] = {"experts": 8}
            return True
        d = edited(sweep, tmp_path, "axes", edit, drop_results=True)
        refused([exe(), "merge", str(d), "--out", str(tmp_path / "m")], "journal.jsonl line", "axes is")
    else:
        d = tmp_path / "axes_results"
        shutil.copytree(sweep, d)
        r = json.loads((d / "results.json").read_text())
        r["points"][0]["axes"] = 8
        (d / "results.json").write_text(json.dumps(r))
        refused([exe(), "compare", str(d / "results.json"), str(sweep / "results.json")], "results.json", "axes is")


@pytest.mark.parametrize("axes", [[{"name": "experts", "values": [8]}], "x", {}, [1], [{"name": 1, "values": []}]])
def test_results_meta_axes_of_another_type(sweep, tmp_path, axes):
    d = tmp_path / "meta"
    shutil.copytree(sweep, d)
    r = json.loads((d / "results.json").read_text())
    r["meta"]["axes"] = axes
    (d / "results.json").write_text(json.dumps(r))
    refused([exe(), "compare", str(d / "results.json"), str(sweep / "results.json")], "results.json", "meta: axes is")
