#!/usr/bin/env python3
"""Plots kreplay's benchmark results: overhead per dispatch against counter groups (each workload;
per dispatch and with replay windows; Nsight Compute and kreplay with one pass per group at 4)
and against footprint (the in-place kernel with and without 8 GiB of untouched allocations).

Usage: python3 bench/plot.py OUT.png BENCH.json [BENCH.json ...]   (several runs' workloads merged)
"""
import json
import sys

PER_DISPATCH = ((1, "kreplay kernel 1 group"), (2, "kreplay kernel 2 groups"), (4, "kreplay kernel 4 groups"))
WINDOW = ((2, "kreplay kernel 2 groups, window"), (4, "kreplay kernel 4 groups, window"))
NCU = "ncu kernel 4 groups, cache all"
UNPACKED = "kreplay kernel 4 groups, one pass per group"


def overhead(row, label):
    value = row["runs"].get(label, {}).get("overhead_ms_per_dispatch")
    return value if value is not None and value > 0 else None


def points(row, labels):
    pts = [(p, overhead(row, label)) for p, label in labels]
    return [(p, v) for p, v in pts if v is not None]


def plot(results_list, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for results in results_list for row in results["workloads"]]
    fig, (by_passes, by_footprint) = plt.subplots(1, 2, figsize=(13, 5.5), gridspec_kw={"width_ratios": [3, 2]})
    for i, row in enumerate(rows):
        colour = "C%d" % i
        for labels, style, what in ((PER_DISPATCH, "-", "per dispatch"), (WINDOW, "--", "window auto")):
            pts = points(row, labels)
            if pts:
                by_passes.plot([p for p, _ in pts], [v for _, v in pts], style, marker="o", color=colour,
                               label="%s, kreplay %s" % (row["workload"], what))
        ncu = overhead(row, NCU)
        if ncu is not None:
            by_passes.scatter([4.1], [ncu], marker="x", s=70, color=colour, label="%s, ncu" % row["workload"])
        unpacked = overhead(row, UNPACKED)
        if unpacked is not None:
            by_passes.scatter([3.9], [unpacked], marker="s", s=30, color=colour,
                              label="%s, kreplay one pass per group" % row["workload"])
    by_passes.set_xlabel("single-pass counter groups (packed into one hardware pass on GH100)")
    by_passes.set_ylabel("overhead per dispatch (ms, log)")
    by_passes.set_yscale("log")
    by_passes.set_xticks([1, 2, 4])
    by_passes.legend(fontsize=6.5, ncol=2)
    by_passes.set_title("overhead against groups (x: Nsight Compute; square: kreplay, groups unpacked)")

    footprint = {"inplace 64 MiB": 0.125, "inplace + 8 GiB untouched": 8.125}
    series = {"kreplay 4 groups, per dispatch": "kreplay kernel 4 groups",
              "kreplay 4 groups, window auto": "kreplay kernel 4 groups, window", "ncu 4 groups": NCU,
              "kreplay 4 groups, one pass per group": UNPACKED}
    for name, label in series.items():
        pts = sorted((footprint[row["workload"]], overhead(row, label)) for row in rows
                     if row["workload"] in footprint and overhead(row, label) is not None)
        if pts:
            by_footprint.plot([f for f, _ in pts], [v for _, v in pts], marker="o", label=name)
    by_footprint.set_xscale("log")
    by_footprint.set_yscale("log")
    by_footprint.set_xlabel("tracked footprint (GiB, log)")
    by_footprint.set_ylabel("overhead per dispatch (ms, log)")
    by_footprint.set_title("overhead against footprint (in-place kernel)")
    by_footprint.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: plot.py OUT.png BENCH.json [BENCH.json ...]")
    plot([json.load(open(p)) for p in sys.argv[2:]], sys.argv[1])
