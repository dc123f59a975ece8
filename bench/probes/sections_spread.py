#!/usr/bin/env python3
"""Probe, on the GPU machine from the repository root (issue 18): how far apart are single runs of
`--set full` on tests/gpu/torch_train.py, kreplay against itself, ncu against itself, and the two
tools against each other? Runs each tool N times (both --clock-control none, the same
--cache-control, ncu on the first LAUNCHES kernels) and packs every `--csv --page details` file
into $OUT/sections_spread.tar.gz (kreplay_<i>.csv, ncu_<i>.csv) for reading elsewhere, with the
wall time of each run in times.txt inside it. `analyze` reads such a file (or a folder of those
CSV files), anywhere: how many rows of the rest (not the deterministic ones) each pair of runs
gives far apart by tests/gpu/run.py's rule (10%, or 0.5 absolute), the same for the medians of
each tool's runs, the labels and kernels of the rows far between the medians, and what the
check's rule for the PyTorch step counts for each tool's runs, ncu's own third run included.
Usage: python3 bench/probes/sections_spread.py [bin dir] [N] [LAUNCHES] [all|none]
       python3 bench/probes/sections_spread.py analyze FILE.tar.gz|DIR [PREFIX ...]
       (PREFIX: the files to read, e.g. kreplay ncu kreplay_ho; default kreplay ncu)"""
import collections
import csv
import glob
import itertools
import os
import statistics
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

ANALYZE = len(sys.argv) > 2 and sys.argv[1] == "analyze"
BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release"
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 and not ANALYZE else 3
LAUNCHES = int(sys.argv[3]) if len(sys.argv) > 3 and not ANALYZE else 30
CACHE = sys.argv[4] if len(sys.argv) > 4 and not ANALYZE else "all"
OUT = os.environ.get("OUT", tempfile.mkdtemp())
WORK = tempfile.mkdtemp()
APP = [sys.executable, "tests/gpu/torch_train.py"]
# As tests/gpu/run.py (section checks): rows that must be equal, the tolerance of the rest.
DETERMINISTIC_LABELS = {"Grid Size", "Block Size", "Threads", "Registers Per Thread", "Executed Instructions",
                        "Static Shared Memory Per Block", "Dynamic Shared Memory Per Block",
                        "# SMs", "Block Limit Registers", "Block Limit Warps", "Block Limit SM",
                        "Driver Shared Memory Per Block"}
TOLERANCE, FLOOR = 0.10, 0.5


def timed(argv, timeout):
    started = time.time()
    try:
        rc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    return rc, time.time() - started


def main():
    times = []
    for i in range(RUNS):
        d = os.path.join(WORK, f"kreplay{i}")
        rc, wall = timed([os.path.join(BIN, "kreplay"), "--set", "full", "--replay-mode", "kernel",
                          "--kernel-replay-beta-enabled", "--cache-control", CACHE, "-d", d, "-o", "out", "-f", "csv",
                          "--", *APP], 300)
        found = glob.glob(os.path.join(d, "**", "*_sections.csv"), recursive=True)
        if found:
            shutil.copy(found[0], os.path.join(WORK, f"kreplay_{i}.csv"))
        times.append(f"kreplay {i} rc {rc} {wall:.1f}s")
        print(times[-1], flush=True)
        rc, wall = timed(["ncu", "--set", "full", "--clock-control", "none", "--cache-control", CACHE, "--csv",
                          "--page", "details", "--print-units", "base", "--launch-count", str(LAUNCHES),
                          "--log-file", os.path.join(WORK, f"ncu_{i}.csv"), *APP], 300)
        times.append(f"ncu {i} rc {rc} {wall:.1f}s")
        print(times[-1], flush=True)
    with open(os.path.join(WORK, "times.txt"), "w") as f:
        f.write("\n".join(times) + "\n")
    with tarfile.open(os.path.join(OUT, "sections_spread.tar.gz"), "w:gz") as tar:
        for name in sorted(os.listdir(WORK)):
            if name.endswith((".csv", ".txt")):
                tar.add(os.path.join(WORK, name), arcname=name)


def details(lines):
    """(ID, section, label) -> value text of `--csv --page details` lines."""
    rows, header = {}, None
    for cells in csv.reader(lines):
        if cells and cells[0] == "ID":
            header = cells
            continue
        if header and len(header) >= len(cells) > header.index("Metric Value") and cells[0].isdigit():
            r = dict(zip(header, cells))
            rows[(int(r["ID"]), r["Section Name"], r["Metric Name"])] = r["Metric Value"]
    return rows


def number(text):
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def analyze(source, prefixes):
    files = {}
    if os.path.isdir(source):
        for path in sorted(glob.glob(os.path.join(source, "*.csv"))):
            with open(path) as f:
                files[os.path.basename(path)] = details(f)
    else:
        with tarfile.open(source) as tar:
            for member in sorted(tar.getmembers(), key=lambda m: m.name):
                if member.name.endswith(".csv"):
                    files[member.name] = details(tar.extractfile(member).read().decode().splitlines())
    runs = {p: [rows for name, rows in files.items() if name.rsplit("_", 1)[0] == p] for p in prefixes}
    every = [r for rs in runs.values() for r in rs]
    keys = [k for k in every[0] if k[2] not in DETERMINISTIC_LABELS
            and all(number(r.get(k, "n/a")) is not None for r in every)]

    def far(a, b):
        return [k for k in keys if abs(number(a[k]) - number(b[k])) > max(TOLERANCE * abs(number(b[k])), FLOOR)]
    print(f"{len(keys)} rows compared; runs {', '.join(f'{p} {len(r)}' for p, r in runs.items())}")
    for (p, a), (q, b) in itertools.combinations_with_replacement(runs.items(), 2):
        pairs = [(x, y) for x, y in itertools.product(a, b) if x is not y]
        if p == q:
            pairs = list(itertools.combinations(a, 2))
        print(f"far, {p} against {q}: {sorted(len(far(x, y)) for x, y in pairs)}")
    medians = {p: {k: str(statistics.median(number(r[k]) for r in rs)) for k in keys} for p, rs in runs.items()}
    first, *others = prefixes
    for other in others:
        apart = far(medians[first], medians[other])
        outside = [k for k in apart if not any(
            abs(number(medians[first][k]) - number(r[k])) <= max(TOLERANCE * abs(number(r[k])), FLOOR)
            for r in runs[other])]
        print(f"medians, {first} against {other}: {len(apart)} far, {len(outside)} of them far from every {other} run")
        print("  by label:", collections.Counter(k[2] for k in apart).most_common(12))
        print("  by kernel:", sorted(collections.Counter(k[0] for k in apart).items()))
    # tests/gpu/run.py's rule for the PyTorch step, before its application-replay explanations:
    # rows far from ncu's first run where ncu's second run is within of it, at most 5% allowed.
    # A third ncu run judged by it says what the rule asks of a tool as reproducible as ncu.
    ncu = runs.get("ncu", [])
    for p, candidates in runs.items():
        counts = sorted(len(set(far(c, ncu[r])) - set(far(ncu[s], ncu[r])))
                        for r, s in itertools.permutations(range(len(ncu)), 2)
                        for c in candidates if c is not ncu[r] and c is not ncu[s])
        if counts:
            print(f"the check's rule, {p} as the tool: far where ncu's second run is within {counts} "
                  f"({int(0.05 * len(keys))} allowed)")


if ANALYZE:
    analyze(sys.argv[2], sys.argv[3:] or ["kreplay", "ncu"])
else:
    main()
