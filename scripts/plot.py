#!/usr/bin/env python3
"""Plots a moebench results file (schema moebench/results@1) as PNG files.

    scripts/plot.py RESULTS.json --out DIR [--tokens N] [--dpi 120]

RESULTS.json may also be a sweep's --out directory (its results.json is read). For every
kernel family and problem in the file it writes three kinds of plot:

  time-<family>[-<problem>].png          median time against tokens (log2 axis) of the config
                                         the sweep chose (what its tables hold) and of the
                                         default config, with the interquartile range as error bars
  peak-<family>[-<problem>].png          the same two configs as % of the measured peak (the
                                         sweep's copy bandwidth); GB/s on the cpu backend or
                                         when the file has no peak
  space-<family>[-<problem>]-t<N>.png    every config timed at one token count, fastest first
                                         (the chosen one green, the default orange):
                                         N is --tokens, or the nearest measured count (log2
                                         distance, ties to the smaller); default: the largest;
                                         a peer's config (cuBLAS, an engine's kernel) named and purple

  Where the sweep measured peers, the time plot adds the best of ours and the best peer at each
  token count (results.json points[].side_by_side), with peer us / ours us above the peer's
  points; where it measured none, the plot says "no peer measured".

  axis-<family>-<axis>.png               for a sweep over problem axes (--experts 64,128,256 ...),
                                         per axis given several values: the chosen config's
                                         median time against that axis, one line per token
                                         count and value of the other axes (with % of peak
                                         beside it on a GPU)

<problem> appears only when the file holds several problems of one family: it names the
parameters that tell them apart (e.g. gmm's stage). Titles give the device and the problem.
Exits 2 with a one-line message when the file is not a results file, 1 when nothing in it
can be plotted. Needs matplotlib (scripts/setup.sh installs it); draws with the Agg backend,
so no display is needed.
"""
import argparse
import hashlib
import json
import math
import os
import re
import sys
import textwrap

SCHEMA = "moebench/results@1"
PROG = "plot.py"


def fail(message, code=2):
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(code)


def load_results(path):
    if os.path.isdir(path):
        path = os.path.join(path, "results.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except (ValueError, UnicodeDecodeError):
        fail(f"{path} is not JSON, so not a {SCHEMA} results file")
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema != SCHEMA or not isinstance(data.get("records"), list):
        found = f"schema {schema!r}" if schema is not None else "no schema field"
        fail(f"{path} is not a {SCHEMA} results file ({found}); give the results.json of a sweep or merge")
    return data


def number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def timed(record):
    """The record's statistics when it was measured and passed validation, else None."""
    s = record.get("stats") or {}
    if record.get("status") != "ok" or not number(s.get("median_us")) or s["median_us"] <= 0:
        return None
    return s


def safe_name(text):
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"


def problem_suffixes(problems):
    """problem_key -> file-name suffix naming what differs between one family's problems."""
    if len(problems) <= 1:
        return {k: "" for k in problems}
    names = sorted({n for p in problems.values() for n in p})
    differing = [n for n in names if len({json.dumps(p.get(n), sort_keys=True) for p in problems.values()}) > 1]
    out = {}
    for key, p in problems.items():
        s = safe_name("-".join(f"{n}-{p.get(n)}" for n in differing))
        if len(s) > 60:
            s = "p" + hashlib.sha1(key.encode()).hexdigest()[:8]
        out[key] = "-" + s
    if len(set(out.values())) < len(out):  # differing values that sanitise alike
        out = {k: "-p" + hashlib.sha1(k.encode()).hexdigest()[:8] for k in problems}
    return out


def label(config_key, width=48):
    """A config key wrapped at its commas, so that long keys do not squeeze the plot."""
    lines, line = [], ""
    for part in config_key.split(","):
        if line and len(line) + 1 + len(part) > width:
            lines.append(line + ",")
            line = part
        else:
            line = f"{line},{part}" if line else part
    return "\n".join(lines + [line])


def nearest_tokens(available, wanted):
    """The runtime's rule: nearest in log2 distance, ties to the smaller count."""
    return min(sorted(available), key=lambda t: abs(math.log2(t) - math.log2(wanted)))


# The two series every per-family plot draws.
SERIES_STYLES = {"best": dict(color="#1f77b4", marker="o", linestyle="-", label="chosen config"),
                 "default": dict(color="#ff7f0e", marker="s", linestyle="--", label="default config"),
                 "ours": dict(color="#2ca02c", marker="^", linestyle=":", label="best of ours"),
                 "peer": dict(color="#9467bd", marker="D", linestyle="-.", label="best peer")}
PEER_COLOR = "#9467bd"


class Group:
    """The records of one (family, problem)."""

    def __init__(self, kernel, problem_key, problem):
        self.kernel, self.problem_key, self.problem = kernel, problem_key, problem
        self.by_tokens = {}
        self.chosen = {}  # tokens -> the config key the sweep chose (what its table holds)
        self.side = {}  # tokens -> the point's side_by_side: the best of ours, the best peer

    def add(self, r):
        self.by_tokens.setdefault(int(r.get("tokens", 0)), []).append(r)

    def best_and_default(self, tokens):
        """The config the sweep chose and the default. The lowest median is not the choice: a
        halving round's few samples can read lower than the winner's many, and a winner within
        noise of the default leaves the default in the table. Files without points fall back
        to the lowest median."""
        recs = self.by_tokens.get(tokens, [])
        ok = [r for r in recs if timed(r)]
        chosen = self.chosen.get(tokens)
        best = next((r for r in ok if r.get("config_key") == chosen), None) if chosen is not None else None
        if best is None and chosen is None:
            best = min(ok, key=lambda r: r["stats"]["median_us"]) if ok else None
        default = next((r for r in recs if r.get("is_default")), None)
        return best, (default if default is not None and timed(default) else None)

    def side_record(self, tokens, which):
        """The record of the best of ours ("ours") or the best peer ("peer") at a token count."""
        side = (self.side.get(tokens) or {}).get(which)
        if not isinstance(side, dict):
            return None
        return next((r for r in self.by_tokens.get(tokens, []) if r.get("config_key") == side.get("config_key")
                     and timed(r)), None)

    def peer_names(self):
        return sorted({s["peer"].get("name", "?") for s in self.side.values() if isinstance(s.get("peer"), dict)})


def group_records(results):
    groups = {}
    for r in results["records"]:
        if not isinstance(r, dict) or int(r.get("tokens", 0) or 0) <= 0:
            continue
        key = (r.get("kernel", "?"), r.get("problem_key", ""))
        if key not in groups:
            groups[key] = Group(key[0], key[1], r.get("problem") or {})
        groups[key].add(r)
    for p in results.get("points") or []:
        chosen = p.get("chosen") if isinstance(p, dict) else None
        group = groups.get((p.get("kernel", "?"), p.get("problem_key", ""))) if isinstance(chosen, dict) else None
        if group is not None and int(p.get("tokens", 0) or 0) > 0:
            group.chosen[int(p["tokens"])] = chosen.get("config_key")
        group = groups.get((p.get("kernel", "?"), p.get("problem_key", ""))) if isinstance(p, dict) else None
        if group is not None and isinstance(p.get("side_by_side"), dict) and int(p.get("tokens", 0) or 0) > 0:
            group.side[int(p["tokens"])] = p["side_by_side"]
    return groups


def setup_matplotlib():
    # scripts/setup.sh unpacks matplotlib into the project's deps folder, not the system Python.
    deps = os.environ.get("MOEBENCH_DEPS_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".deps")
    sys.path.append(os.path.join(deps, "python"))
    try:
        import matplotlib
    except ImportError:
        fail("matplotlib is not installed: run scripts/setup.sh (it unpacks matplotlib into .deps/python)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    return plt, FixedLocator, FuncFormatter, NullLocator


class Plotter:
    def __init__(self, results, out_dir, dpi):
        self.meta = results.get("meta") or {}
        self.out_dir = out_dir
        self.dpi = dpi
        self.plt, self.FixedLocator, self.FuncFormatter, self.NullLocator = setup_matplotlib()
        self.written = []
        device = self.meta.get("device") or "unknown device"
        backend = self.meta.get("backend")
        self.device = device if not backend or device.startswith(backend) else f"{device} ({backend})"

    def titles(self, fig, ax, headline, group):
        fig.suptitle(f"{headline}\n{self.device}", fontsize=11)
        problem = ", ".join(group.problem_key.split(","))
        ax.set_title("\n".join(textwrap.wrap(problem, 110)) or "(no problem parameters)", fontsize=7.5, color="#444444")

    def tokens_axis(self, ax, tokens):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(self.FixedLocator(tokens))
        ax.xaxis.set_minor_locator(self.NullLocator())
        ax.xaxis.set_major_formatter(self.FuncFormatter(lambda v, _: f"{int(round(v))}"))
        ax.set_xlabel("tokens (log2 scale)")
        if len(tokens) == 1:
            ax.set_xlim(tokens[0] / 2, tokens[0] * 2)
        ax.grid(True, which="major", alpha=0.3)

    def plain_log_labels(self, axis):
        """1, 20, 300 rather than 10^0, 2x10^1: minor ticks labelled only on a short range."""
        axis.set_major_formatter(self.FuncFormatter(lambda v, _: f"{v:g}"))
        lo, hi = axis.get_view_interval()
        few_decades = lo > 0 and hi / lo < 100

        def minor(v, _):
            lead = round(v / 10 ** math.floor(math.log10(v))) if v > 0 else 0
            return f"{v:g}" if few_decades and lead in (2, 3, 5) else ""

        axis.set_minor_formatter(self.FuncFormatter(minor))

    def save(self, fig, name):
        path = os.path.join(self.out_dir, safe_name(name) + ".png")
        fig.savefig(path, dpi=self.dpi)
        self.plt.close(fig)
        self.written.append(path)

    def series(self, group, value):
        """(tokens, values, lows, highs) of the best and the default config."""
        out = {"best": ([], [], [], []), "default": ([], [], [], []), "ours": ([], [], [], []), "peer": ([], [], [], [])}
        with_peers = bool(group.peer_names())
        for t in sorted(group.by_tokens):
            best, default = group.best_and_default(t)
            pairs = [("best", best), ("default", default)]
            # Ours beside the best peer of the same sweep, where it measured one.
            if with_peers:
                pairs += [("ours", group.side_record(t, "ours")), ("peer", group.side_record(t, "peer"))]
            for label, r in pairs:
                if r is None:
                    continue
                v = value(r)
                if v is None:
                    continue
                xs, ys, lo, hi = out[label]
                xs.append(t)
                ys.append(v[0])
                lo.append(v[0] - v[1])
                hi.append(v[2] - v[0])
        return out

    def time_plot(self, group, suffix):
        def median_iqr(r):
            s = r["stats"]
            q1 = s.get("q1_us") if number(s.get("q1_us")) else s["median_us"]
            q3 = s.get("q3_us") if number(s.get("q3_us")) else s["median_us"]
            return s["median_us"], min(q1, s["median_us"]), max(q3, s["median_us"])

        data = self.series(group, median_iqr)
        if not data["best"][0]:
            return
        fig, ax = self.plt.subplots(figsize=(8, 5.2), layout="constrained")
        for label, z in (("best", 3), ("default", 2), ("ours", 4), ("peer", 4)):
            xs, ys, lo, hi = data[label]
            if xs:
                style = dict(SERIES_STYLES[label])
                if label == "peer":
                    style["label"] = f"best peer ({', '.join(group.peer_names())})"
                ax.errorbar(xs, ys, yerr=[lo, hi], capsize=3, markersize=5, linewidth=1.5, zorder=z, **style)
        self.peer_ratios(ax, group, data)
        # The speed-up over the default, where there is one worth reading.
        dflt = dict(zip(data["default"][0], data["default"][1]))
        for t, y in zip(data["best"][0], data["best"][1]):
            if t in dflt and y > 0 and dflt[t] / y >= 1.05:
                ax.annotate(f"{dflt[t] / y:.2f}x", (t, y), textcoords="offset points", xytext=(0, -14),
                            ha="center", fontsize=7, color="#1f77b4")
        ax.set_yscale("log")
        ax.margins(y=0.15)  # room for the speed-up labels under the lowest points
        self.plain_log_labels(ax.yaxis)
        ax.set_ylabel("median time per call (us, log scale); bars: q1..q3")
        self.tokens_axis(ax, sorted(set(data["best"][0]) | set(data["default"][0])))
        ax.legend(loc="upper left", fontsize=8)
        self.titles(fig, ax, f"{group.kernel}: time against tokens", group)
        self.save(fig, f"time-{group.kernel}{suffix}")

    def peer_ratios(self, ax, group, data):
        """peer us / ours us above each peer point; where no peer was measured, says so."""
        for t, y in zip(data["peer"][0], data["peer"][1]):
            ratio = (group.side.get(t) or {}).get("peer_over_ours")
            if number(ratio):
                ax.annotate(f"peer/ours {ratio:.2f}x", (t, y), textcoords="offset points", xytext=(0, 8), ha="center",
                            fontsize=7, color=PEER_COLOR)
        without = sorted(t for t in group.by_tokens if not isinstance((group.side.get(t) or {}).get("peer"), dict))
        if group.side and without:
            where = "" if len(without) == len(group.by_tokens) else " at T=" + ",".join(map(str, without))
            ax.text(0.99, 0.01, f"no peer measured{where}", transform=ax.transAxes, ha="right", va="bottom",
                    fontsize=7, color="#666666")

    def axis_plots(self, results):
        """Time (and % of peak on a GPU) against each axis of the sweep given several values."""
        points = [p for p in results.get("points") or [] if isinstance(p.get("axes"), dict)]
        for axis in self.meta.get("axes") or []:
            name, values = axis.get("name"), [str(v) for v in axis.get("values") or []]
            if len(values) < 2:
                continue
            numeric = all(re.fullmatch(r"-?\d+", v) for v in values)
            for kernel in sorted({p.get("kernel") for p in points}):
                lines = {}
                for p in points:
                    a = p["axes"]
                    chosen = p.get("chosen") or {}
                    if p.get("kernel") != kernel or name not in a or not number(chosen.get("median_us")):
                        continue
                    others = ",".join(f"{k}={v}" for k, v in sorted(a.items()) if k != name)
                    key = (p.get("tokens", 0), others)
                    lines.setdefault(key, []).append((str(a[name]), chosen["median_us"], p.get("pct_peak")))
                if not lines:
                    continue
                pct = self.meta.get("backend") != "cpu" and any(
                    number(v[2]) for pts in lines.values() for v in pts)
                fig, axes = self.plt.subplots(1, 2 if pct else 1, figsize=(12 if pct else 8, 5.2), layout="constrained",
                                              squeeze=False)
                position = {v: (int(v) if numeric else i) for i, v in enumerate(values)}
                for (tokens, others), pts in sorted(lines.items()):
                    pts.sort(key=lambda v: values.index(v[0]) if v[0] in values else len(values))
                    label = f"T={tokens}" + (f" {others}" if others else "")
                    xs = [position.get(v[0], len(values)) for v in pts]
                    axes[0][0].plot(xs, [v[1] for v in pts], marker="o", markersize=4, linewidth=1.2, label=label)
                    if pct:
                        axes[0][1].plot(xs, [v[2] if number(v[2]) else float("nan") for v in pts], marker="o",
                                        markersize=4, linewidth=1.2, label=label)
                for ax in axes[0]:
                    ax.xaxis.set_major_locator(self.FixedLocator([position[v] for v in values]))
                    ax.xaxis.set_major_formatter(self.FuncFormatter(
                        lambda x, _: next((v for v in values if position[v] == x), "")))
                    ax.set_xlabel(name)
                    ax.grid(True, which="major", alpha=0.3)
                axes[0][0].set_yscale("log")
                self.plain_log_labels(axes[0][0].yaxis)
                axes[0][0].set_ylabel("median time of the chosen config (us, log scale)")
                axes[0][0].legend(loc="best", fontsize=7)
                if pct:
                    axes[0][1].set_ylabel("% of peak")
                    axes[0][1].set_ylim(bottom=0)
                fig.suptitle(f"{kernel}: time against {name}\n{self.device}", fontsize=11)
                self.save(fig, f"axis-{kernel}-{name}")

    def peak_plot(self, group, suffix):
        peak = self.meta.get("copy_bw_gbps")
        # A cpu's copy bandwidth is no peak (data in cache outruns it); older files carry the ratio.
        has_pct = self.meta.get("backend") != "cpu" and any(
            number(r.get("pct_peak")) for rs in group.by_tokens.values() for r in rs)
        field = "pct_peak" if has_pct else "gbps"

        def value(r):
            v = r.get(field)
            return (v, v, v) if number(v) else None

        data = self.series(group, value)
        if not data["best"][0]:
            return
        fig, ax = self.plt.subplots(figsize=(8, 5.2), layout="constrained")
        for label, z in (("best", 3), ("default", 2)):
            xs, ys, _, _ = data[label]
            if xs:
                ax.plot(xs, ys, markersize=5, linewidth=1.5, zorder=z, **SERIES_STYLES[label])
        top = max(data["best"][1] + data["default"][1])
        if has_pct:
            what = f"measured copy bandwidth {peak:.0f} GB/s" if number(peak) else "measured peak"
            ax.set_ylabel(f"% of peak ({what})")
            ax.set_ylim(0, max(5.0, top * 1.15))
            if top > 100:  # above the copy bandwidth the data came from cache: no fraction of the peak
                ax.axhline(100, color="#b00020", linestyle=":", linewidth=1)
                ax.annotate("above 100%: served from cache (L2), not memory", (0.01, 100), xycoords=("axes fraction", "data"),
                            textcoords="offset points", xytext=(0, 3), fontsize=7, color="#b00020")
            headline = f"{group.kernel}: % of peak against tokens"
        else:
            ax.set_ylabel("GB/s moved (no % of peak: " +
                          ("a cpu's memory copy is no peak)" if self.meta.get("backend") == "cpu" else "none measured)"))
            ax.set_ylim(0, top * 1.15 if top > 0 else 1)
            headline = f"{group.kernel}: bandwidth against tokens"
        self.tokens_axis(ax, sorted(set(data["best"][0]) | set(data["default"][0])))
        ax.legend(loc="upper left", fontsize=8)
        self.titles(fig, ax, headline, group)
        self.save(fig, f"peak-{group.kernel}{suffix}")

    def space_plot(self, group, suffix, wanted):
        counts = sorted(t for t, rs in group.by_tokens.items() if any(timed(r) for r in rs))
        if not counts:
            return
        t = counts[-1] if wanted is None else nearest_tokens(counts, wanted)
        recs = group.by_tokens[t]
        ok = sorted((r for r in recs if timed(r)), key=lambda r: r["stats"]["median_us"])
        bad = [r for r in recs if not timed(r)]
        limit = 40
        shown, hidden = ok[:limit], len(ok) - limit
        default_key = next((r.get("config_key") for r in recs if r.get("is_default")), None)
        labels = [label(r.get("config_key", "?") + (" (default)" if r.get("config_key") == default_key else "")
                        + (f" [{r['peer']}]" if r.get("peer") else "")) for r in shown]
        labels += [label(f"{r.get('config_key', '?')} [{r.get('status') or 'not timed'}]") for r in bad[:10]]
        n = len(labels)
        rows = sum(1 + l.count("\n") * 0.6 for l in labels)
        fig, ax = self.plt.subplots(figsize=(9, max(3.4, 2.0 + 0.26 * rows)), layout="constrained")
        med = [r["stats"]["median_us"] for r in shown]
        q1 = [min(r["stats"].get("q1_us", m) if number(r["stats"].get("q1_us")) else m, m) for r, m in zip(shown, med)]
        q3 = [max(r["stats"].get("q3_us", m) if number(r["stats"].get("q3_us")) else m, m) for r, m in zip(shown, med)]
        chosen = group.chosen.get(t, shown[0].get("config_key") if shown else None)
        colors = []
        for r in shown:
            key = r.get("config_key")
            colors.append("#2ca02c" if key == chosen else "#ff7f0e" if key == default_key
                          else PEER_COLOR if r.get("peer") else "#9e9e9e")
        ys = list(range(len(shown)))
        ax.barh(ys, med, xerr=[[m - a for m, a in zip(med, q1)], [b - m for m, b in zip(med, q3)]], color=colors,
                capsize=2, error_kw=dict(elinewidth=0.8, ecolor="#333333"))
        for i, r in enumerate(bad[:10]):
            ax.text(0.01, len(shown) + i, "not timed", transform=ax.get_yaxis_transform(), va="center", fontsize=7,
                    color="#b00020")
        ax.set_yticks(range(n))
        ax.set_yticklabels(labels, fontsize=7 if n > 20 else 8)
        ax.invert_yaxis()
        if med and max(med) / min(med) > 20:
            ax.set_xscale("log")
            self.plain_log_labels(ax.xaxis)
            ax.set_xlabel("median time per call (us, log scale); bars: q1..q3")
        else:
            ax.set_xlabel("median time per call (us); bars: q1..q3")
        ax.grid(True, axis="x", alpha=0.3)
        note = f" (nearest measured to {wanted})" if wanted is not None and wanted != t else ""
        more = f"; {hidden} slower configs not shown" if hidden > 0 else ""
        if len(bad) > 10:
            more += f"; {len(bad) - 10} more not timed"
        headline = (f"{group.kernel}: config space at {t} tokens{note}\n"
                    f"{len(ok)} timed, {len(bad)} invalid or failed; green chosen, orange default"
                    f"{', purple a peer [named]' if any(r.get('peer') for r in shown) else ''}{more}")
        fig.suptitle(f"{headline}\n{self.device}", fontsize=10)
        problem = "\n".join(textwrap.wrap(", ".join(group.problem_key.split(",")), 120))
        fig.supxlabel(problem or "(no problem parameters)", fontsize=7.5, color="#444444")
        self.save(fig, f"space-{group.kernel}{suffix}-t{t}")


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description="Plot a moebench results file (moebench/results@1) as PNGs.")
    ap.add_argument("results", metavar="RESULTS.json", help="results.json of a sweep or merge (or its directory)")
    ap.add_argument("--out", required=True, metavar="DIR", help="directory for the PNG files (created if missing)")
    ap.add_argument("--tokens", type=int, metavar="N",
                    help="token count of the config-space plots (default: the largest measured)")
    ap.add_argument("--dpi", type=int, default=120, help="resolution of the PNGs (default 120)")
    args = ap.parse_args(argv)
    if args.tokens is not None and args.tokens <= 0:
        fail("--tokens must be a positive token count")
    if args.dpi < 30 or args.dpi > 600:
        fail("--dpi must be between 30 and 600")
    results = load_results(args.results)
    groups = group_records(results)
    if not groups:
        fail(f"{args.results} holds no records to plot", 1)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        fail(f"cannot create {args.out}: {e.strerror}")
    p = Plotter(results, args.out, args.dpi)
    by_kernel = {}
    for (kernel, key), g in groups.items():
        by_kernel.setdefault(kernel, {})[key] = g.problem
    for (kernel, key), g in sorted(groups.items()):
        suffix = problem_suffixes(by_kernel[kernel])[key]
        p.time_plot(g, suffix)
        p.peak_plot(g, suffix)
        p.space_plot(g, suffix, args.tokens)
    p.axis_plots(results)
    if not p.written:
        fail(f"{args.results} has no timed (status ok) record to plot", 1)
    for path in p.written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
