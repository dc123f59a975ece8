#!/usr/bin/env python3
"""Probe, on the GPU machine from the repository root (issue 18): metrics per kernel of
tests/gpu/torch_train.py under kreplay and under ncu (both --clock-control none,
--cache-control all unless kreplay's options say none), side by side per kernel ID, each of kreplay's groups one hardware pass.

Default groups: L2 lookup hits | misses. "L2 Hit Rate" differed from ncu's on 27 of 30 kernels
under `--set full`; measured so on 2026-12-02, hits and misses were within 2% of ncu's on all 30.
Next (durations of tiny kernels, 0.3-0.7 us longer on ~20% of them): whether kreplay's range
profiler collects the context-aware duration that `gpu__time_duration` takes when it can, e.g.
  python3 bench/probes/per_kernel_metrics.py .gpu-bin 30 \\
    "gpu__time_duration.sum,gpu__time_duration_measured_user.sum,gpu__time_duration_measured_wallclock.sum"
A metric named in several groups is shown per group; kreplay collects it once, in the first
hardware pass that has it, and gives that value to every group (seen 2026-12-02), so this does not
compare executions: to measure a metric in a replay, name it only in a later group.
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
        for d_id, group, name, kernel, value in con.execute(
                "SELECT dispatch_id, replay_pass, counter_name, kernel_name, value FROM counters_collection "
                "ORDER BY dispatch_id"):
            values.setdefault(d_id, {"kernel": kernel})[name] = value
            values[d_id][f"{name}@{group}"] = value
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
    # A metric in several groups: kreplay's value in each, "|" between.
    groups_of = {m: [g for g, group in enumerate(GROUPS) if m in group] for m in unique}

    def mine(i, m):
        if len(groups_of[m]) == 1:
            return str(a[i].get(m))
        return "|".join(str(a[i].get(f"{m}@{g}")) for g in groups_of[m])
    print(f"{'ID':>3} {'kernel':30} " + " ".join(f"{m[:34] + ' k/ncu':>40}" for m in unique))
    for i in range(min(LAUNCHES, len(a), len(b))):
        cells = [f"{mine(i, m):>19}/{b[i].get(m)!s:<20}" for m in unique]
        print(f"{i:>3} {b[i]['kernel'][:30]:30} " + " ".join(cells))


main()
