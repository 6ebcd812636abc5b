#!/usr/bin/env python3
"""Judge the kernel issues' performance targets from benchmark sweeps.

scripts/gpu-targets.sh runs each target's sweeps into DIR/<target id>/<sweep index>/ and
scripts/peers.py writes DIR/peers.json; this reads them and prints one markdown row per target
(measured, bound, met) and writes the same as JSON. Speed figures come only from these
sweeps' results, never from tests. vs_best_peer targets read the sweep's own side-by-side of
ours and the best peer it measured (results.json points[].side_by_side); a published figure
stands in only where the target names one with its source, and is marked so. graph_us targets
judge the layer as engines run it (records[].graph: N calls in one CUDA graph, per call). Any
target may name an "anchor", a figure someone published for the same kind of work, printed
beside the measurement; it judges nothing.

usage: check_targets.py DIR [--targets scripts/targets.json] [--out report.json] [--fail-on-miss]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load_results(path):
    with open(path) as f:
        doc = json.load(f)
    if doc.get("schema") != "moebench/results@1":
        raise ValueError(f"{path} is not a moebench results@1 file (schema {doc.get('schema')!r})")
    return doc


def valid_records(doc, kernel, tokens):
    return [r for r in doc.get("records", [])
            if r.get("kernel") == kernel and r.get("tokens") == tokens and r.get("status") == "ok"
            and r.get("validation", {}).get("ok", False)]


def best(records):
    """The record with the lowest median time."""
    return min(records, key=lambda r: r["stats"]["median_us"]) if records else None


def measure(target, docs, peers):
    """(value, detail, configs, complete) for the target's metric, or (None, why, [], False) when it
    cannot be judged. A target over several token counts is judged at each; its value is the worst
    of those measured, and `complete` says whether every one was (a sweep of some of them still
    shows a miss)."""
    tokens = target["tokens"]
    if not isinstance(tokens, list):
        value, detail, configs = measure_at(target, docs, peers, tokens)
        return value, detail, configs, value is not None
    worst, missing = None, []
    for t in tokens:
        value, detail, configs = measure_at(target, docs, peers, t)
        if value is None:
            missing.append(f"T={t}: {detail}")
        elif worst is None or (value > worst[0] if "max" in target else value < worst[0]):
            worst = (value, f"worst at T={t}: {detail}", configs)
    if worst is None:
        return None, missing[0], [], False
    value, detail, configs = worst
    if missing:
        detail += f"; not judged at {len(missing)} of {len(tokens)} token counts ({missing[0]})"
    return value, detail, configs, not missing


def anchor_text(target):
    """A figure someone published for the same kind of work (another GPU, another run), shown
    beside the measurement as the anchor it is: it judges nothing."""
    a = target.get("anchor")
    if not isinstance(a, dict):
        return ""
    return (f"; published anchor, not measured here: {a['peer']} {a['value']}{unit_of(target['metric'])} "
            f"({a['where']}; source: {a['source']})")


def stage_label(sweep):
    """A stage sweep's name in a detail: its family, and gmm's stage."""
    return sweep[0] + (f" {sweep[sweep.index('--stage') + 1]}" if "--stage" in sweep[:-1] else "")


def side_by_side_at(target, docs, tokens):
    """(value, detail, configs) of a vs_best_peer target: the best peer's median over the best of
    ours at the sweep's point (its side_by_side, measured in the same sweep: same inputs, timer
    and clocks), above 1 when ours is faster. Without a peer measured there, a published figure
    the target names ("published": {"peer", "us", "source"}) stands in, marked as published;
    without either the target is not judged."""
    sweep, doc = target["sweeps"][0], docs[0]
    points = [p for p in doc.get("points", []) if p.get("kernel") == sweep[0] and p.get("tokens") == tokens]
    if not points:
        return None, f"no {sweep[0]} point at tokens={tokens}", []
    s = points[0].get("side_by_side")
    if not isinstance(s, dict):
        return None, "the results have no side-by-side fields (written by an older moebench)", []
    ours, peer = s.get("ours"), s.get("peer")
    ratio = s.get("peer_over_ours")
    if isinstance(peer, dict) and isinstance(ours, dict) and isinstance(ratio, (int, float)):
        return ratio, (f"{peer.get('name')} {peer['median_us']:.2f} us vs ours {ours['median_us']:.2f} us, "
                       f"measured in the same sweep"), [ours.get("config_key", ""), peer.get("config_key", "")]
    published = target.get("published")
    if isinstance(ours, dict) and isinstance(published, dict) and published.get("us", 0) > 0:
        return (published["us"] / ours["median_us"],
                f"PUBLISHED figure, not measured here: {published.get('peer', 'peer')} {published['us']:.2f} us "
                f"(source: {published['source']}) vs ours {ours['median_us']:.2f} us", [ours.get("config_key", "")])
    return None, f"not judged: {s.get('note') or 'no ratio'} at tokens={tokens}", []


def graph_at(target, docs, tokens):
    """(value, detail, configs) of a graph_us target: the best valid candidate's median per call in a
    CUDA graph of N calls (records[].graph, timing=graph), the layer as engines run it."""
    sweep, doc = target["sweeps"][0], docs[0]
    records = valid_records(doc, sweep[0], tokens)
    timed = [r for r in records if isinstance(r.get("graph"), dict) and r["graph"].get("status") == "ok"
             and isinstance(r["graph"].get("stats"), dict) and r["graph"]["stats"].get("median_us")]
    if not timed:
        why = next((f"{r['graph'].get('status')}: {r['graph'].get('reason', '')}" for r in records
                    if isinstance(r.get("graph"), dict)), "the results have no graph timing (written by an older moebench)")
        return None, f"no graph-timed {sweep[0]} record at tokens={tokens} ({why})", []
    rec = min(timed, key=lambda r: r["graph"]["stats"]["median_us"])
    g = rec["graph"]
    us = g["stats"]["median_us"]
    detail = (f"timing=graph: {g.get('graph_calls')} calls in one CUDA graph, per call; alone "
              f"{rec['stats']['median_us']:.1f} us")
    if rec.get("pdl") is not None:
        detail += f"; pdl={rec['pdl']}"
    return us, detail, [rec.get("config_key", "")]


def measure_at(target, docs, peers, tokens):
    metric = target["metric"]
    if metric == "vs_best_peer":
        return side_by_side_at(target, docs, tokens)
    if metric == "graph_us":
        return graph_at(target, docs, tokens)
    picks = []
    for sweep, doc in zip(target["sweeps"], docs):
        rec = best(valid_records(doc, sweep[0], tokens))
        if rec is None:
            return None, f"no valid {sweep[0]} record at tokens={tokens}", []
        picks.append((rec, doc))
    configs = [r["config_key"] for r, _ in picks]
    rec, doc = picks[0]
    copy = doc.get("meta", {}).get("copy_bw_gbps", 0.0)
    if metric == "median_us":
        return rec["stats"]["median_us"], f"{rec['gbps']:.0f} GB/s", configs
    if metric in ("pct_copy", "pct_copy_sum"):
        if copy <= 0:
            return None, "the sweep measured no copy bandwidth", configs
        total_bytes = sum(r["bytes"] for r, _ in picks)
        total_us = sum(r["stats"]["median_us"] for r, _ in picks)
        gbps = total_bytes / (total_us * 1e-6) * 1e-9
        return 100.0 * gbps / copy, f"{gbps:.0f} of {copy:.0f} GB/s in {total_us:.1f} us", configs
    if metric == "tflops":
        return rec["tflops"], f"{rec['tflops']:.0f} TFLOP/s in {rec['stats']['median_us']:.1f} us", configs
    if metric == "vs_engine":
        # The second sweep tuned an engine's kernel on the same device (--backend vllm|sglang):
        # its best time over ours, above 1 when ours is faster.
        other, other_doc = picks[1]
        engine = other_doc.get("meta", {}).get("engine") or "the engine"
        ratio = other["stats"]["median_us"] / rec["stats"]["median_us"]
        return ratio, (f"{engine} {other['stats']['median_us']:.2f} us vs ours {rec['stats']['median_us']:.2f} us, "
                       f"each tuned in its own sweep on this device"), configs
    if metric == "x_sweep":
        other = picks[1][0]
        if other["tflops"] <= 0:
            return None, "the second sweep's best record has no TFLOP/s", configs
        return rec["tflops"] / other["tflops"], f"{rec['tflops']:.0f} vs {other['tflops']:.0f} TFLOP/s", configs
    if metric == "layer_vs_stages":
        # The first sweep is the layer, the others its stages: each stage's bytes moved at the
        # copy bandwidth its own sweep measured is the least time it can take.
        parts, bound_us = [], 0.0
        for (r, d), sweep in zip(picks[1:], target["sweeps"][1:]):
            bw = d.get("meta", {}).get("copy_bw_gbps", 0.0)
            if bw <= 0:
                return None, f"the {stage_label(sweep)} sweep measured no copy bandwidth", configs
            us = r["bytes"] / (bw * 1e9) * 1e6
            bound_us += us
            parts.append(f"{stage_label(sweep)} {us:.2f}")
        if bound_us <= 0:
            return None, "the stages moved no bytes", configs
        layer_us = rec["stats"]["median_us"]
        return layer_us / bound_us, f"{layer_us:.1f} us vs {bound_us:.1f} us bandwidth-bound ({' + '.join(parts)})", configs
    if metric == "pct_peer":
        # "peer": "grouped_mm" or "scaled_mm" judges against that torch op, else cuBLAS's dense GEMM.
        peer = peers.get(target["id"]) or {}
        op = target.get("peer")
        tflops = peer.get(f"{op}_tflops" if op else "tflops", 0)
        name = f"torch._{op}" if op else peer.get("name", "")
        if tflops <= 0:
            why = peer.get(f"{op}_error", "") if op else ""
            return None, "no peer measurement (run scripts/peers.py on the GPU)" + (f": {why}" if why else ""), configs
        return 100.0 * rec["tflops"] / tflops, f"{rec['tflops']:.0f} vs {name} {tflops:.0f} TFLOP/s", configs
    raise ValueError(f"target {target['id']}: unknown metric {metric!r}")


def judge(target, value):
    if value is None:
        return None
    if "max" in target:
        return value <= target["max"]
    return value >= target["min"]


UNITS = {"median_us": " us", "graph_us": " us", "tflops": " TFLOP/s", "x_sweep": "x", "layer_vs_stages": "x",
         "vs_best_peer": "x", "vs_engine": "x"}


def unit_of(metric):
    return UNITS.get(metric, "%")


def bound_text(target):
    unit = unit_of(target["metric"])
    return (f"<= {target['max']}{unit}" if "max" in target else f">= {target['min']}{unit}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="the folder scripts/gpu-targets.sh wrote (DIR/<id>/<i>/results.json)")
    ap.add_argument("--targets", default=os.path.join(HERE, "targets.json"))
    ap.add_argument("--out", help="write the judgement as JSON here (default DIR/targets-report.json)")
    ap.add_argument("--fail-on-miss", action="store_true", help="exit 1 when a measured target is missed")
    a = ap.parse_args()
    with open(a.targets) as f:
        spec = json.load(f)
    if spec.get("schema") != "moebench/targets@1":
        sys.exit(f"check_targets: {a.targets} is not a moebench/targets@1 file")
    for t in spec["targets"]:
        anchor = t.get("anchor")
        if anchor is not None and not (isinstance(anchor, dict) and all(anchor.get(k) for k in ("peer", "value", "where", "source"))):
            sys.exit(f"check_targets: target {t.get('id')}: an anchor needs its peer, value, where (the GPU and shape) "
                     "and source")
        pub = t.get("published")
        if pub is not None and (not isinstance(pub, dict) or not pub.get("source") or not pub.get("us", 0) > 0):
            sys.exit(f"check_targets: target {t.get('id')}: a published figure needs its us and its source "
                     "(\"published\": {\"peer\", \"us\", \"source\"}), so the report can say where it comes from")
    peers_path = os.path.join(a.dir, "peers.json")
    peers = {}
    if os.path.exists(peers_path):
        with open(peers_path) as f:
            peers = json.load(f).get("peers", {})
    rows, device = [], None
    for t in spec["targets"]:
        paths = [os.path.join(a.dir, t["id"], str(i), "results.json") for i in range(len(t["sweeps"]))]
        missing = [p for p in paths if not os.path.exists(p)]
        row = {"id": t["id"], "issue": t["issue"], "name": t["name"], "metric": t["metric"],
               "bound": bound_text(t), "value": None, "met": None, "detail": "", "configs": [], "commands": []}
        if missing:
            row["detail"] = "not measured: " + ", ".join(os.path.relpath(p, a.dir) for p in missing) + " missing"
        else:
            try:
                docs = [load_results(p) for p in paths]
            except (OSError, ValueError) as e:
                row["detail"] = f"unreadable results: {e}"
            else:
                device = device or docs[0].get("meta", {}).get("device")
                row["commands"] = [d.get("meta", {}).get("command", "") for d in docs]
                row["value"], row["detail"], row["configs"], complete = measure(t, docs, peers)
                row["detail"] += anchor_text(t)
                # A figure someone else published (other hardware, other clocks) says so in the report.
                row["published"] = "PUBLISHED figure" in row["detail"]
                met = judge(t, row["value"])
                # Some token counts unmeasured: a miss among the others is still a miss.
                row["met"] = met if complete or met is False else None
        rows.append(row)

    print(f"# Performance targets{' on ' + device if device else ''}\n")
    print("| issue | target | measured | bound | met | detail | config |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        unit = unit_of(r["metric"])
        value = "—" if r["value"] is None else f"{r['value']:.2f}{unit}" if unit == "x" else f"{r['value']:.1f}{unit}"
        met = {True: "yes", False: "**no**", None: "—"}[r["met"]]
        print(f"| {r['issue']} | {r['name']} | {value} | {r['bound']} | {met} | {r['detail']} | "
              f"{' + '.join(r['configs'])} |")
    judged = [r for r in rows if r["met"] is not None]
    print(f"\n{sum(r['met'] for r in judged)} of {len(judged)} measured targets met; "
          f"{len(rows) - len(judged)} not measured.")
    out = a.out or os.path.join(a.dir, "targets-report.json")
    with open(out, "w") as f:
        json.dump({"schema": "moebench/targets-report@1", "device": device, "targets": rows}, f, indent=1)
    if a.fail_on_miss and any(r["met"] is False for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
