#!/usr/bin/env python3
"""Probe, on the GPU machine from the repository root (issue 18): why "L2 Hit Rate" of
tests/gpu/torch_train.py's kernels differs from Nsight Compute's on 27 of 30 kernels under
`--set full` (e.g. 95% against 54% for the first kernel, 2026-12-02). The rate's hits and misses
need two hardware passes; this measures them as two groups under kreplay and under ncu (both
--clock-control none, --cache-control all) and prints, per kernel ID, hits and misses from each.
Usage: python3 bench/probes/l2_hits.py [bin dir] [N] [kreplay option,...]   (files under $OUT)"""
import glob
import os
import sqlite3
import subprocess
import sys
import tempfile

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release"
LAUNCHES = int(sys.argv[2]) if len(sys.argv) > 2 else 30
OPTIONS = sys.argv[3].split(",") if len(sys.argv) > 3 else []
OUT = os.environ.get("OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)
APP = [sys.executable, "tests/gpu/torch_train.py"]
METRICS = ["lts__t_sectors_lookup_hit.sum", "lts__t_sectors_lookup_miss.sum"]


def ours():
    d = os.path.join(OUT, "kreplay")
    argv = [os.path.join(BIN, "kreplay"), "--pmc", METRICS[0], "--pmc", METRICS[1], "--replay-mode", "kernel",
            "--kernel-replay-beta-enabled", *OPTIONS, "-d", d, "-o", "out", "--", *APP]
    k = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    print(f"kreplay rc {k.returncode}: {k.stderr.strip().splitlines()[-1][:160] if k.stderr.strip() else ''}")
    values = {}
    for db in glob.glob(os.path.join(d, "**", "*_results.db"), recursive=True):
        con = sqlite3.connect(db)
        for d_id, name, kernel, value in con.execute(
                "SELECT dispatch_id, counter_name, kernel_name, value FROM counters_collection ORDER BY dispatch_id"):
            values.setdefault(d_id, {"kernel": kernel})[name] = value
    return [values[k] for k in sorted(values)]


def theirs():
    n = subprocess.run(["ncu", "--metrics", ",".join(METRICS), "--clock-control", "none", "--cache-control", "all",
                        "--csv", "--print-units", "base", "--launch-count", str(LAUNCHES), *APP],
                       capture_output=True, text=True, timeout=300)
    print(f"ncu rc {n.returncode}")
    values = {}
    for line in n.stdout.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) > 10 and cells[0].strip('"').isdigit() and cells[-3] in METRICS:
            try:
                values.setdefault(int(cells[0].strip('"')), {"kernel": cells[4]})[cells[-3]] = float(cells[-1].strip('"').replace(",", ""))
            except ValueError:
                pass
    return [values[k] for k in sorted(values)]


def main():
    a, b = ours(), theirs()
    print(f"{'ID':>3} {'kernel':30} {'hits k/ncu':>22} {'misses k/ncu':>22} {'rate k/ncu':>14}")
    for i in range(min(LAUNCHES, len(a), len(b))):
        h, m = (a[i].get(x) for x in METRICS)
        hn, mn = (b[i].get(x) for x in METRICS)
        rate = lambda x, y: f"{100 * x / (x + y):.0f}" if x is not None and y is not None and x + y else "-"
        print(f"{i:>3} {b[i]['kernel'][:30]:30} {h!s:>10}/{hn!s:<11} {m!s:>10}/{mn!s:<11} {rate(h, m):>6}/{rate(hn, mn):<7}")


main()
