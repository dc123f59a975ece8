#!/usr/bin/env python3
"""Probe, on the GPU machine from the repository root (issue 18): is the memory clock lower while
kreplay measures PyTorch's tiny kernels than while Nsight Compute does? Session 14's lead: on
tests/gpu/torch_train.py, `--set full` showed "DRAM Frequency" 2.66 GHz under kreplay against
3.15 GHz under ncu, and durations/cycles ~25% longer.

Runs the step under `kreplay --section SpeedOfLight` and `ncu --section SpeedOfLight` (both
--clock-control none, the same --cache-control, ncu on the first N kernels) and prints, per
kernel ID: DRAM Frequency, SM Frequency and Duration from each tool, and the memory and SM
clocks kreplay read (NVML) around that dispatch's unit (kreplay_replay_cost).
Usage: python3 bench/probes/memory_clock.py [bin dir] [all|none] [N] [kreplay option,...]
(files under $OUT; e.g. `--replay-window,1` measures every dispatch in a unit of its own)"""
import csv
import glob
import os
import sqlite3
import subprocess
import sys
import tempfile

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release"
CACHE = sys.argv[2] if len(sys.argv) > 2 else "all"
LAUNCHES = int(sys.argv[3]) if len(sys.argv) > 3 else 40
OPTIONS = sys.argv[4].split(",") if len(sys.argv) > 4 else []
OUT = os.environ.get("OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)
APP = [sys.executable, "tests/gpu/torch_train.py"]
LABELS = ["DRAM Frequency", "SM Frequency", "Duration"]


def details(path):
    """{(ID, label): (value, unit, kernel)} of a `--csv --page details` file, SpeedOfLight rows."""
    rows = {}
    with open(path) as f:
        header = None
        for cells in csv.reader(f):
            if cells and cells[0] == "ID":
                header = cells
                continue
            # ncu leaves a row's empty rule columns out.
            if not header or len(cells) < header.index("Metric Value") + 1 or not cells[0].isdigit():
                continue
            r = dict(zip(header, cells))
            if r.get("Metric Name") in LABELS:
                try:
                    value = float(r["Metric Value"].replace(",", ""))
                except ValueError:
                    value = None
                rows[(int(r["ID"]), r["Metric Name"])] = (value, r.get("Metric Unit"), r.get("Kernel Name", "")[:28])
    return rows


def main():
    d = os.path.join(OUT, "kreplay")
    argv = [os.path.join(BIN, "kreplay"), "--section", "SpeedOfLight", "--replay-mode", "kernel",
            "--kernel-replay-beta-enabled", "--cache-control", CACHE, *OPTIONS, "-d", d, "-o", "out", "-f", "csv", "rocpd",
            "--", *APP]
    k = subprocess.run(argv, capture_output=True, text=True, timeout=400)
    print(f"kreplay rc {k.returncode}: {k.stderr.strip().splitlines()[-1][:160] if k.stderr.strip() else ''}")
    ours = {}
    for path in glob.glob(os.path.join(d, "**", "*_sections.csv"), recursive=True):
        ours.update(details(path))
    clocks = {}
    for db in glob.glob(os.path.join(d, "**", "*_results.db"), recursive=True):
        con = sqlite3.connect(db)
        for row in con.execute("SELECT dispatch_id, sm_clock_min_mhz, sm_clock_max_mhz, memory_clock_min_mhz, "
                               "memory_clock_max_mhz FROM kreplay_replay_cost ORDER BY dispatch_id"):
            clocks[row[0]] = row[1:]
    ncu_log = os.path.join(OUT, "ncu.csv")
    n = subprocess.run(["ncu", "--section", "SpeedOfLight", "--clock-control", "none", "--cache-control", CACHE,
                        "--csv", "--page", "details", "--print-units", "base", "--launch-count", str(LAUNCHES),
                        "--log-file", ncu_log, *APP], capture_output=True, text=True, timeout=400)
    print(f"ncu rc {n.returncode}")
    theirs = details(ncu_log) if os.path.exists(ncu_log) else {}
    if not theirs:
        head = open(ncu_log).read()[:1500] if os.path.exists(ncu_log) else "(no log file)"
        print(f"no ncu rows read; its log begins:\n{head}\nits stdout ends: {n.stdout[-800:]}\nstderr: {n.stderr[-400:]}")
    # The sections' IDs count the run's dispatches from 0 in dispatch order (docs/sections.md).
    by_order = [clocks[k] for k in sorted(clocks)]
    print(f"{'ID':>3} {'kernel (ncu)':28} " + " ".join(f"{l + ' k/ncu':>24}" for l in LABELS)
          + "   kreplay clocks SM min-max, memory min-max MHz")
    for i in range(LAUNCHES):
        cells = []
        for label in LABELS:
            a = ours.get((i, label), (None, None, ""))[0]
            b = theirs.get((i, label), (None, None, ""))[0]
            cells.append(f"{num(a):>11}/{num(b):<12}")
        name = theirs.get((i, "Duration"), (None, None, "-"))[2]
        print(f"{i:>3} {name:28} " + " ".join(cells) + f"   {by_order[i] if i < len(by_order) else None}")


def num(value):
    return "-" if value is None else f"{value:.4g}"


main()
