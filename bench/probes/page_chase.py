#!/usr/bin/env python3
"""Probe, on the GPU machine from the repository root (issue 18): bench/probes/page_chase.cu's
dependent loads over 2 MiB pages, their duration under ncu and kreplay (both --clock-control
none, --cache-control all and none). Per tool, the chase over 1 page, over every page right
after the pages were touched, and over every page after a 75 MiB sweep of the program's own.
If kreplay's flush (a sweep) leaves translations cold where ncu's does not, kreplay's chase
over every page is slower than ncu's by about what the program's own sweep costs under ncu.
Usage: python3 bench/probes/page_chase.py [bin dir] [rounds] [pages]   (files under $OUT)"""
import glob
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release"
ROUNDS = sys.argv[2] if len(sys.argv) > 2 else "5"
PAGES = sys.argv[3] if len(sys.argv) > 3 else "32"
OUT = os.environ.get("OUT", tempfile.mkdtemp())
APP = os.path.join(tempfile.mkdtemp(), "page_chase")
METRIC = "gpu__time_duration.sum"
# The chase launches of each round in launch order (10 launches per round, chases at 1, 3, 6, 9).
LABELS = {1: "1 page", 3: f"{PAGES} pages touched", 6: "after a strided sweep", 9: "after a sweep by SM"}


def show(tool, durations):
    """durations: launch index -> ns, over all rounds."""
    by = {}
    for i, ns in durations.items():
        if i % 10 in LABELS:
            by.setdefault(LABELS[i % 10], []).append(ns)
    cells = [f"{label} {statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f})" for label, v in by.items()]
    print(f"{tool:34} " + " | ".join(cells))


def ncu(cache):
    n = subprocess.run(["ncu", "--metrics", METRIC, "--clock-control", "none", "--cache-control", cache, "--csv",
                        "--print-units", "base", APP, ROUNDS, PAGES], capture_output=True, text=True, timeout=300)
    durations = {}
    for line in n.stdout.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) > 10 and cells[0].isdigit() and cells[-3] == METRIC:
            durations[int(cells[0])] = float(cells[-1].replace(",", ""))
    show(f"ncu {cache} (rc {n.returncode})", durations)


def kreplay(cache):
    d = os.path.join(OUT, f"kreplay_{cache}")
    k = subprocess.run([os.path.join(BIN, "kreplay"), "--pmc", METRIC, "--cache-control", cache, "--replay-mode", "kernel",
                        "--kernel-replay-beta-enabled", "-d", d, "-o", "out", "--", APP, ROUNDS, PAGES],
                       capture_output=True, text=True, timeout=300)
    durations = {}
    for db in glob.glob(os.path.join(d, "**", "*_results.db"), recursive=True):
        con = sqlite3.connect(db)
        rows = con.execute("SELECT dispatch_id, value FROM counters_collection WHERE counter_name = ? "
                           "ORDER BY dispatch_id", (METRIC,)).fetchall()
        durations = {i: v for i, (_, v) in enumerate(rows)}
    show(f"kreplay {cache} (rc {k.returncode})", durations)


def main():
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-o", APP, "bench/probes/page_chase.cu"], check=True)
    print(subprocess.run([APP, ROUNDS, PAGES], capture_output=True, text=True).stdout.strip())
    for cache in ("all", "none"):
        ncu(cache)
        kreplay(cache)


main()
