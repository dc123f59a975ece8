#!/usr/bin/env python3
"""Probe, on the GPU machine from the repository root (issue 18): active warps per active SM
cycle of bench/probes/one_block.cu's one-block kernel (4 warps: one execution gives at most 4)
under kreplay in several settings and under ncu (both --clock-control none). A value above 4
means the kernel's range counted warps that are not its own.
Usage: python3 bench/probes/one_block.py [bin dir] [N launches]   (files under $OUT)"""
import glob
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release"
LAUNCHES = sys.argv[2] if len(sys.argv) > 2 else "20"
OUT = os.environ.get("OUT", tempfile.mkdtemp())
WORK = tempfile.mkdtemp()
APP = os.path.join(WORK, "one_block")
RATIO = ["sm__warps_active.sum", "sm__cycles_active.sum"]
MORE = "smsp__inst_executed.sum"  # a second group: windows replay the kernel


def summary(label, ratios):
    if not ratios:
        print(f"{label:58} no values")
        return
    over = sum(r > 4.0 for r in ratios)
    print(f"{label:58} n {len(ratios):3}  min {min(ratios):.3f}  median {statistics.median(ratios):.3f}  "
          f"max {max(ratios):.3f}  above 4: {over}")


def ours(mode, label, options, env=None, before=()):
    d = os.path.join(OUT, f"{mode}_" + label.replace(" ", "_").replace(",", ""))
    argv = [os.path.join(BIN, "kreplay"), *before, "--pmc", *RATIO, *options, "--replay-mode", "kernel",
            "--kernel-replay-beta-enabled", "-d", d, "-o", "out", "--", APP, LAUNCHES, str(mode)]
    k = subprocess.run(argv, capture_output=True, text=True, timeout=200, env=dict(os.environ, **(env or {})))
    values = {}
    for db in glob.glob(os.path.join(d, "**", "*_results.db"), recursive=True):
        con = sqlite3.connect(db)
        for d_id, name, kernel, value in con.execute(
                "SELECT dispatch_id, counter_name, kernel_name, value FROM counters_collection"):
            if "one_block" in kernel:
                values.setdefault(d_id, {})[name] = value
    ratios = [v[RATIO[0]] / v[RATIO[1]] for v in values.values() if v.get(RATIO[1])]
    summary(f"kreplay mode {mode} {label} (rc {k.returncode})", ratios)


def theirs(mode, cache):
    n = subprocess.run(["ncu", "--metrics", ",".join(RATIO), "--clock-control", "none", "--cache-control", cache,
                        "--kernel-name", "one_block", "--csv", "--print-units", "base", APP, LAUNCHES, str(mode)],
                       capture_output=True, text=True, timeout=200)
    values = {}
    for line in n.stdout.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) > 10 and cells[0].isdigit() and cells[-3] in RATIO:
            values.setdefault(int(cells[0]), {})[cells[-3]] = float(cells[-1].replace(",", ""))
    ratios = [v[RATIO[0]] / v[RATIO[1]] for v in values.values() if v.get(RATIO[1])]
    summary(f"ncu mode {mode} --cache-control {cache} (rc {n.returncode})", ratios)


def main():
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-o", APP, "bench/probes/one_block.cu"], check=True)
    for mode in (1, 3, 0):
        theirs(mode, "all")
        theirs(mode, "none")
        ours(mode, "one pass, all", ["--cache-control", "all"])
        ours(mode, "one pass, none", ["--cache-control", "none"])
        ours(mode, "one pass, all, host-ordered flush", ["--cache-control", "all"], {"KREPLAY_HOST_ORDERED_FLUSH": "1"})
        ours(mode, "two groups, all (windows)", ["--pmc", MORE, "--cache-control", "all"], {"KREPLAY_PACK_GROUPS": "0"})
        ours(mode, "two groups, all, ratio in the replay (windows)", ["--cache-control", "all"],
             {"KREPLAY_PACK_GROUPS": "0"}, ["--pmc", MORE])
        ours(mode, "two groups, none (windows)", ["--pmc", MORE, "--cache-control", "none"], {"KREPLAY_PACK_GROUPS": "0"})
        ours(mode, "two groups, all, window 1", ["--pmc", MORE, "--cache-control", "all", "--replay-window", "1"],
             {"KREPLAY_PACK_GROUPS": "0"})


main()
