"""The Python Kernel reads the tables `moebench lookup` reads and reports the same choice."""

import json
import os
import subprocess

import pytest

import moebench

from conftest import cpu_kernel

PROBLEM = {"experts": 16, "topk": 4}


def lookup(tables, tokens):
    exe = os.environ.get("MOEBENCH_EXE")
    if not exe:
        pytest.skip("MOEBENCH_EXE is not set (ctest sets it to the built moebench)")
    cmd = [exe, "lookup", "router", "--experts", "16", "--topk", "4", "--backend", "cpu", "--tables", str(tables),
           "--tokens", ",".join(map(str, tokens)), "--json"]
    return [json.loads(line) for line in subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()]


def test_describe_reports_the_entry_lookup_chooses(tmp_path):
    tokens = [16, 40, 64, 500]
    table = lookup(tmp_path, [16])[0]["table"]  # where the table for this problem goes
    os.makedirs(os.path.dirname(table), exist_ok=True)
    with open(table, "w") as f:
        json.dump({"schema": "moebench/config-table@1", "kernel": "router", "backend": "cpu", "device": "cpu",
                   "build": {"id": moebench.build_id("router")},
                   "entries": {"16": {"config": {"rows_per_task": 4, "select": "iterative"}, "median_us": 2.0},
                               "64": {"config": {"rows_per_task": 32, "select": "partial_sort"}, "median_us": 5.0}}},
                  f)
    kern = cpu_kernel("router", PROBLEM, table_dirs=[tmp_path])
    for t, chosen in zip(tokens, lookup(tmp_path, tokens)):
        assert chosen["match"] != "fallback" and chosen["table"] == table
        assert kern.config(t) == chosen["config"]
        words = ",".join(f"{k}={v}" for k, v in sorted(chosen["config"].items()))
        assert kern.describe(t).startswith(f"router at {t} tokens: {words} (")
        if chosen["match"] == "exact":
            assert kern.describe(t) == f"router at {t} tokens: {words} ({chosen['reason']})"
        else:  # the same entry, named as moe::Kernel::describe names it
            assert f"(nearest key in log2 distance is {chosen['entry_tokens']}: exact entry" in kern.describe(t)
    assert kern.config(500)["rows_per_task"] == 32 and kern.config(20)["select"] == "iterative"


def test_a_kernel_over_a_hundred_thousand_entries_binds_as_lookup_reads_it(tmp_path):
    # One config resolved per entry, each a search of the table's sorted keys: n log n. A scan of
    # the keys per entry made this n^2, many minutes, which ctest's timeout would end.
    n = 100_000
    table = lookup(tmp_path, [16])[0]["table"]
    os.makedirs(os.path.dirname(table), exist_ok=True)
    selects = ("iterative", "partial_sort")
    entries = {str(t): {"config": {"rows_per_task": 1 + t % 32, "select": selects[t % 2]}, "median_us": 1.0}
               for t in range(1, n + 1)}
    with open(table, "w") as f:
        json.dump({"schema": "moebench/config-table@1", "kernel": "router", "backend": "cpu", "device": "cpu",
                   "build": {"id": moebench.build_id("router")}, "entries": entries}, f)
    kern = cpu_kernel("router", PROBLEM, table_dirs=[tmp_path])
    probes = [1, 2, 777, 65_536, 99_999, n, 3 * n]
    for t, chosen in zip(probes, lookup(tmp_path, probes)):
        assert kern.config(t) == chosen["config"]
        assert chosen["entry_tokens"] == min(t, n)
    assert kern.config(777) == {"rows_per_task": 1 + 777 % 32, "select": "partial_sort"}
