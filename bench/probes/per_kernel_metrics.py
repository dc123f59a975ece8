#!/usr/bin/env python3
"""Probe, on the GPU machine from the repository root (issue 18): metrics per kernel of
tests/gpu/torch_train.py under kreplay and under ncu (both --clock-control none, --cache-control
all unless kreplay's options say none), side by side per kernel ID, each of kreplay's groups one
hardware pass.

Default groups: L2 lookup hits | misses (2026-12-02: within 2% of ncu's on all 30 kernels). Seen
with it the same day (docs/sections.md): the duration metrics ("gpu__time_duration.sum,
gpu__time_duration_measured_user.sum,gpu__time_duration_measured_wallclock.sum": kreplay takes the
context-aware duration, as ncu does), durations alone (within both tools' spread), and hits,
sectors and duration in one call ("gpu__time_duration.sum,lts__t_sectors_lookup_hit.sum;
lts__t_sectors.sum": equal sectors; ncu's hits, taken from a replayed pass, 40-60% fewer on the
small kernels). A metric named in several groups is collected once by kreplay (docs/kernel-replay.md,
"Collecting counters"), so naming one twice does not compare executions.
Usage: python3 bench/probes/per_kernel_metrics.py [bin dir] [N] [groups: ';' between, ',' within]
       [kreplay option,...]   (files under $OUT)"""
import glob
import os
import sqlite3
import subprocess
import sys
import tempfile

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release"
LAUNCHES = int(sys.argv[2]) if len(sys.argv) > 2 else 30
GROUPS = [g.split(",") for g in (sys.argv[3] if len(sys.argv) > 3 else
                                  "lts__t_sectors_lookup_hit.sum;lts__t_sectors_lookup_miss.sum").split(";")]
OPTIONS = sys.argv[4].split(",") if len(sys.argv) > 4 else []
# ncu takes kreplay's --cache-control when the options give one.
CACHE = OPTIONS[OPTIONS.index("--cache-control") + 1] if "--cache-control" in OPTIONS[:-1] else "all"
METRICS = [m for g in GROUPS for m in g]
OUT = os.environ.get("OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)
APP = [sys.executable, "tests/gpu/torch_train.py"]


def ours():
    d = os.path.join(OUT, "kreplay")
    argv = [os.path.join(BIN, "kreplay")]
    for group in GROUPS:
        argv += ["--pmc", *group]
    argv += ["--replay-mode", "kernel", "--kernel-replay-beta-enabled", *OPTIONS, "-d", d, "-o", "out", "--", *APP]
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
    n = subprocess.run(["ncu", "--metrics", ",".join(dict.fromkeys(METRICS)), "--clock-control", "none", "--cache-control", CACHE,
                        "--csv", "--print-units", "base", "--launch-count", str(LAUNCHES), *APP],
                       capture_output=True, text=True, timeout=300)
    print(f"ncu rc {n.returncode}")
    values = {}
    for line in n.stdout.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) > 10 and cells[0].isdigit() and cells[-3] in METRICS:
            try:
                value = float(cells[-1].replace(",", ""))
            except ValueError:  # "n/a"
                value = None
            values.setdefault(int(cells[0]), {"kernel": cells[4]})[cells[-3]] = value
    return [values[k] for k in sorted(values)]


def main():
    a, b = ours(), theirs()
    unique = list(dict.fromkeys(METRICS))
    print(f"{'ID':>3} {'kernel':30} " + " ".join(f"{m[:34] + ' k/ncu':>40}" for m in unique))
    for i in range(min(LAUNCHES, len(a), len(b))):
        cells = [f"{a[i].get(m)!s:>19}/{b[i].get(m)!s:<20}" for m in unique]
        print(f"{i:>3} {b[i]['kernel'][:30]:30} " + " ".join(cells))


main()
