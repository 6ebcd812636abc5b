"""Kernels per layer call: the launches the cuda layer backend makes on a described Hopper for
every preset, dtype, path and token count (`moebench kernel-static`, tuner/problem/layer_launches.cpp),
and the rules the gate holds them to. Each latency-bound decode kernel pays a launch, a prologue
and a tail, so the count is what the decode path exists to keep small."""

# At these token counts a folded decode call is the front, up and down: nothing else.
DECODE_TOKENS = 16
DECODE_MAX_KERNELS = 3


def calls(lk):
    """{(model, dtype, path, tokens): call, with its row's activation} of a report's layer_kernels."""
    return {(r["model"], r["dtype"], r["path"], c["tokens"]): dict(c, activation=r.get("activation", "silu"))
            for r in (lk or {}).get("rows", []) for c in r["calls"]}


def check_layer_kernels(base, new):
    """Failures: a folded SwiGLU decode call above DECODE_MAX_KERNELS at T <= DECODE_TOKENS (a
    rule, whatever the baseline says; gpt-oss's biased stages each run a pad-row pass ahead of
    their gmm, so it is held to its baseline only); a call that launches more kernels than in the
    baseline, or that ran there and is invalid now."""
    bad = []
    now = calls(new)
    for (model, dtype, path, t), c in sorted(now.items()):
        if path == "decode" and c["activation"] == "silu" and t <= DECODE_TOKENS and c.get("fold_combine") == 1 and c.get("kernels", 0) > DECODE_MAX_KERNELS:
            bad.append(f"layer {model} {dtype} path=decode at {t} tokens: {c['kernels']} kernels per call with the fold, "
                       f"above {DECODE_MAX_KERNELS} (front, up, down)")
    for key, b in sorted(calls(base).items()):
        c = now.get(key)
        if c is None or "kernels" not in b:
            continue
        who = f"layer {key[0]} {key[1]} path={key[2]} at {key[3]} tokens"
        if "kernels" not in c:
            bad.append(f"{who}: ran in {b['kernels']} kernels, now invalid: {c.get('invalid', '?')}")
        elif c["kernels"] > b["kernels"]:
            bad.append(f"{who}: {b['kernels']} -> {c['kernels']} kernels per call")
    return bad


def cell(c):
    """The kernel count, `n*` where combine ran as its own kernel (down could not fold), `-` where invalid."""
    if "kernels" not in c:
        return "-"
    return f"{c['kernels']}{'*' if c.get('not_folded') else ''}"


def markdown_rows(lk):
    """The markdown table of kernels per call, one row per preset, dtype and path."""
    if not lk:
        return []
    tokens = lk["tokens"]
    out = ["", f"Kernels per layer call on a described {lk['device']} (stages `auto`: their defaults; decode with "
           "`fold_combine=1 l2_prefetch=2`; `*`: down cannot fold, combine runs; `-`: invalid):", "",
           "| preset | dtype | path | " + " | ".join(f"T={t}" for t in tokens) + " |",
           "|---|---|---|" + "---|" * len(tokens)]
    for r in lk["rows"]:
        by_t = {c["tokens"]: c for c in r["calls"]}
        out.append(f"| {r['model']} | {r['dtype']} | {r['path']} | " + " | ".join(cell(by_t[t]) for t in tokens) + " |")
    return out
