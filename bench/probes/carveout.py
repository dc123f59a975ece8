#!/usr/bin/env python3
"""Probe, on the GPU machine from the repository root (issue 18): bench/probes/carveout.cu's
one-block kernels that differ only in shared memory, each after itself and after another, their
duration under ncu and kreplay (both --clock-control none, --cache-control all and none), and
ncu's shared-memory configuration of each. If the SM's reconfiguration of its L1/shared split
shows in the next kernel's duration, a kernel runs longer after one of another configuration
(with `none`, in both tools) — and under kreplay's `all`, whose flush kernel runs before every
kernel, each kernel whose configuration differs from the flush's runs long every time, where
ncu's later passes follow the same kernel.
Usage: python3 bench/probes/carveout.py [bin dir] [rounds]   (files under $OUT)"""
import glob
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release"
ROUNDS = sys.argv[2] if len(sys.argv) > 2 else "5"
OUT = os.environ.get("OUT", tempfile.mkdtemp())
APP = os.path.join(tempfile.mkdtemp(), "carveout")
METRIC = "gpu__time_duration.sum"
CONFIG = "launch__shared_mem_config_size"
# Each launch of a round (7 launches per round): the kernel and the one before it.
ORDER = ["none after tiny", "tiny after none", "tiny after tiny", "big after tiny", "big after big",
         "none after big", "tiny after none"]


def show(tool, values):
    """values: launch index -> ns, over all rounds."""
    by = {}
    for i, ns in values.items():
        by.setdefault(ORDER[i % 7], []).append(ns)
    print(f"{tool:30} " + " | ".join(f"{k} {statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f})" for k, v in by.items()))


def ncu(cache):
    n = subprocess.run(["ncu", "--metrics", f"{METRIC},{CONFIG}", "--clock-control", "none", "--cache-control", cache,
                        "--csv", "--print-units", "base", APP, ROUNDS], capture_output=True, text=True, timeout=300)
    durations, configs = {}, {}
    for line in n.stdout.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) > 10 and cells[0].isdigit():
            if cells[-3] == METRIC:
                durations[int(cells[0])] = float(cells[-1].replace(",", ""))
            elif cells[-3] == CONFIG:
                configs.setdefault(cells[4].split("(")[0], cells[-1])
    show(f"ncu {cache} (rc {n.returncode})", durations)
    return configs


def kreplay(cache):
    d = os.path.join(OUT, f"kreplay_{cache}")
    k = subprocess.run([os.path.join(BIN, "kreplay"), "--pmc", METRIC, "--cache-control", cache, "--replay-mode", "kernel",
                        "--kernel-replay-beta-enabled", "-d", d, "-o", "out", "--", APP, ROUNDS],
                       capture_output=True, text=True, timeout=300)
    durations = {}
    for db in glob.glob(os.path.join(d, "**", "*_results.db"), recursive=True):
        rows = sqlite3.connect(db).execute("SELECT value FROM counters_collection WHERE counter_name = ? "
                                           "ORDER BY dispatch_id", (METRIC,)).fetchall()
        durations = {i: v for i, (v,) in enumerate(rows)}
    show(f"kreplay {cache} (rc {k.returncode})", durations)


def main():
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-o", APP, "bench/probes/carveout.cu"], check=True)
    print(subprocess.run([APP, ROUNDS], capture_output=True, text=True).stdout.strip())
    for cache in ("none", "all"):
        configs = ncu(cache)
        kreplay(cache)
    print("ncu's shared-memory configuration per kernel:", configs)


main()
