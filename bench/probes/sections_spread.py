#!/usr/bin/env python3
"""Probe, on the GPU machine from the repository root (issue 18): how far apart are single runs of
`--set full` on tests/gpu/torch_train.py, kreplay against itself, ncu against itself, and the two
tools against each other? Runs each tool N times (both --clock-control none, the same
--cache-control, ncu on the first LAUNCHES kernels) and packs every `--csv --page details` file
into $OUT/sections_spread.tar.gz (kreplay_<i>.csv, ncu_<i>.csv) for reading elsewhere, with the
wall time of each run in times.txt and kreplay's messages in kreplay_<i>.txt inside it (NCU_RUNS=K
in the environment runs ncu K times instead of N). `analyze` reads such a file (or a folder of those
CSV files), anywhere: how many rows of the rest (not the deterministic ones) each pair of runs
gives far apart by tests/gpu/run.py's rule (10%, or 0.5 absolute), the same for the medians of
each tool's runs, the labels and kernels of the rows far between the medians, and what the
check's earlier rule for the PyTorch step (until 2026-12-04) counts for each tool's runs, ncu's
own third run included.
Variants: each further argument PREFIX=OPTIONS runs kreplay N times more with those options
(shell words), its files named PREFIX_<i>.csv (default: one variant, `kreplay=`).
Usage: python3 bench/probes/sections_spread.py [bin dir] [N] [LAUNCHES] [all|none] [PREFIX=OPTIONS ...]
       python3 bench/probes/sections_spread.py analyze FILE.tar.gz|DIR [PREFIX ...]
       (PREFIX: the files to read, e.g. kreplay ncu kreplay_ho; default kreplay ncu)"""
import collections
import glob
import itertools
import os
import statistics
import shutil
import subprocess
import sys
import tarfile
import shlex
import tempfile
import time

# The check's page reader and rule (tests/gpu/details.py), from the repository root or anywhere.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "gpu"))
from details import DETERMINISTIC_LABELS, details_rows, far_rows, number  # noqa: E402

ANALYZE = len(sys.argv) > 2 and sys.argv[1] == "analyze"
BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release"
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 and not ANALYZE else 3
LAUNCHES = int(sys.argv[3]) if len(sys.argv) > 3 and not ANALYZE else 30
CACHE = sys.argv[4] if len(sys.argv) > 4 and not ANALYZE else "all"
VARIANTS = [v.split("=", 1) for v in (sys.argv[5:] if not ANALYZE else [])] or [["kreplay", ""]]
OUT = os.environ.get("OUT", tempfile.mkdtemp())
APP = [sys.executable, "tests/gpu/torch_train.py"]


def timed(argv, timeout, log=None):
    """Runs argv: (exit status, seconds); its stderr goes to `log` when given."""
    started = time.time()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        rc, stderr = done.returncode, done.stderr
    except subprocess.TimeoutExpired as e:
        rc, stderr = "timeout", e.stderr or ""
    if log:
        with open(log, "w") as f:
            f.write(stderr if isinstance(stderr, str) else stderr.decode(errors="replace"))
    return rc, time.time() - started


def main():
    work = tempfile.mkdtemp()
    times = []
    for i in range(RUNS):
        for prefix, options in VARIANTS:
            d = os.path.join(work, f"{prefix}{i}")
            rc, wall = timed([os.path.join(BIN, "kreplay"), "--set", "full", "--replay-mode", "kernel",
                              "--kernel-replay-beta-enabled", "--cache-control", CACHE, *shlex.split(options),
                              "-d", d, "-o", "out", "-f", "csv", "--", *APP], 300,
                             os.path.join(work, f"{prefix}_{i}.txt"))
            found = glob.glob(os.path.join(d, "**", "*_sections.csv"), recursive=True)
            if found:
                shutil.copy(found[0], os.path.join(work, f"{prefix}_{i}.csv"))
            times.append(f"{prefix} {i} rc {rc} {wall:.1f}s")
            print(times[-1], flush=True)
        if i >= int(os.environ.get("NCU_RUNS", RUNS)):
            continue
        rc, wall = timed(["ncu", "--set", "full", "--clock-control", "none", "--cache-control", CACHE, "--csv",
                          "--page", "details", "--print-units", "base", "--launch-count", str(LAUNCHES),
                          "--log-file", os.path.join(work, f"ncu_{i}.csv"), *APP], 300)
        times.append(f"ncu {i} rc {rc} {wall:.1f}s")
        print(times[-1], flush=True)
    with open(os.path.join(work, "times.txt"), "w") as f:
        f.write("\n".join(times) + "\n")
    with tarfile.open(os.path.join(OUT, "sections_spread.tar.gz"), "w:gz") as tar:
        for name in sorted(os.listdir(work)):
            if name.endswith((".csv", ".txt")):
                tar.add(os.path.join(work, name), arcname=name)


def analyze(source, prefixes):
    files = {}
    if os.path.isdir(source):
        for path in sorted(glob.glob(os.path.join(source, "*.csv"))):
            with open(path) as f:
                files[os.path.basename(path)] = details_rows(f)
    else:
        with tarfile.open(source) as tar:
            for member in sorted(tar.getmembers(), key=lambda m: m.name):
                if member.name.endswith(".csv"):
                    files[member.name] = details_rows(tar.extractfile(member).read().decode().splitlines())
    runs = {p: [rows for name, rows in files.items() if name.rsplit("_", 1)[0] == p] for p in prefixes}
    every = [r for rs in runs.values() for r in rs]
    keys = [k for k in every[0] if k[2] not in DETERMINISTIC_LABELS
            and all(number(r.get(k, "n/a")) is not None for r in every)]

    def far(a, b):
        return far_rows(keys, a, b)
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
        outside = [k for k in apart if all(far_rows([k], medians[first], r) for r in runs[other])]
        print(f"medians, {first} against {other}: {len(apart)} far, {len(outside)} of them far from every {other} run")
        print("  by label:", collections.Counter(k[2] for k in apart).most_common(12))
        print("  by kernel:", sorted(collections.Counter(k[0] for k in apart).items()))
    # tests/gpu/run.py's rule for the PyTorch step until 2026-12-04, before its application-replay
    # explanations: rows far from ncu's first run where ncu's second run is within of it, at most
    # 5% allowed. A third ncu run judged by it says what the rule asks of a tool as reproducible
    # as ncu: it failed at times, and the check now takes ncu's application replay as arbiter
    # (docs/sections.md), which needs a run of it (not made here).
    ncu = runs.get("ncu", [])
    for p, candidates in runs.items():
        counts = sorted(len(set(far(c, ncu[r])) - set(far(ncu[s], ncu[r])))
                        for r, s in itertools.permutations(range(len(ncu)), 2)
                        for c in candidates if c is not ncu[r] and c is not ncu[s])
        if counts:
            print(f"the earlier rule, {p} as the tool: far where ncu's second run is within {counts} "
                  f"({int(0.05 * len(keys))} allowed)")


if ANALYZE:
    analyze(sys.argv[2], sys.argv[3:] or ["kreplay", "ncu"])
else:
    main()
