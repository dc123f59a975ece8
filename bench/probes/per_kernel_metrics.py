#!/usr/bin/env python3
"""Metrics per kernel, kreplay beside Nsight Compute: runs ON the GPU machine, from the repository
root. Runs tests/gpu/torch_train.py (a PyTorch training step) under kreplay, once per variant,
and once under ncu (both --clock-control none; ncu on the first N launches, with the first
variant's --cache-control, else all), and prints, per kernel ID, each metric as
ncu/kreplay variant 0/kreplay variant 1/..., and the kernel's place in its replay unit in each
variant (@0 = first of its unit).

Groups: ';' between groups, ',' within one; each group should fit one hardware pass
(`kreplay avail pmc-check --chip GH100 ...`). Default: L2 lookup hits; misses.
Variants: '|' between variants, ',' between the items of one: a kreplay option and its value as
two items (`--replay-window,1`, `--cache-control,none`), NAME=VALUE for kreplay's environment
(`KREPLAY_PACK_GROUPS=0`), `pmc=METRIC` for one more group (a second hardware pass, so that the
groups go through a replayed window). An empty variant is kreplay's defaults.
When the groups take several hardware passes, the first is measured by the application's own
execution (execution 0) and the others by replays of the same dispatch, so that two groups
holding metrics of one raw counter compare two executions.
Usage: python3 bench/probes/per_kernel_metrics.py [bin dir] [N] [groups] [variants]   (files under $OUT)
  e.g. python3 bench/probes/per_kernel_metrics.py .gpu-bin 30 \
         "gpu__time_duration.sum;sm__cycles_active.avg" "|--replay-window,1|--cache-control,none"
"""
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
VARIANTS = [[i for i in v.split(",") if i] for v in (sys.argv[4] if len(sys.argv) > 4 else "").split("|")]
# ncu takes kreplay's --cache-control when the first variant gives one.
FIRST = VARIANTS[0]
CACHE = FIRST[FIRST.index("--cache-control") + 1] if "--cache-control" in FIRST[:-1] else "all"
METRICS = [m for g in GROUPS for m in g]
OUT = os.environ.get("OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)
APP = [sys.executable, "tests/gpu/torch_train.py"]


def ours(index, variant):
    d = os.path.join(OUT, f"kreplay{index}")
    env = dict(os.environ, **dict(i.split("=", 1) for i in variant if "=" in i and not i.startswith("pmc=")))
    options = [i for i in variant if "=" not in i]
    groups = GROUPS + [[i[4:]] for i in variant if i.startswith("pmc=")]
    argv = [os.path.join(BIN, "kreplay")]
    for group in groups:
        argv += ["--pmc", *group]
    argv += ["--replay-mode", "kernel", "--kernel-replay-beta-enabled", *options, "-d", d, "-o", "out", "--", *APP]
    k = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    print(f"kreplay {index} {variant or 'default'} rc {k.returncode}: "
          f"{k.stderr.strip().splitlines()[-1][:160] if k.stderr.strip() else ''}")
    values = {}
    for db in glob.glob(os.path.join(d, "**", "*_results.db"), recursive=True):
        con = sqlite3.connect(db)
        for d_id, name, kernel, value in con.execute(
                "SELECT dispatch_id, counter_name, kernel_name, value FROM counters_collection ORDER BY dispatch_id"):
            values.setdefault(d_id, {"kernel": kernel})[name] = value
        # Each dispatch's place in its replay unit: a unit's costs are recorded on its first
        # dispatch (kreplay_replay_cost.pass_ns), the others' pass times are zero.
        place = -1
        try:
            costs = con.execute("SELECT dispatch_id, pass_ns FROM kreplay_replay_cost ORDER BY dispatch_id").fetchall()
        except sqlite3.OperationalError:  # no replay, no table
            costs = []
        for d_id, pass_ns in costs:
            place = 0 if any(int(t) for t in (pass_ns or "").strip("[]").split(",") if t.strip()) else place + 1
            values.setdefault(d_id, {"kernel": "?"})["place"] = place
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


def num(value):
    return "-" if value is None else f"{value:.4g}"


def main():
    runs = [ours(i, v) for i, v in enumerate(VARIANTS)]
    b = theirs()
    unique = list(dict.fromkeys(METRICS))
    print("per kernel: its place in its replay unit in each variant; per metric: ncu, then kreplay in each variant")
    for i in range(min([LAUNCHES, len(b)] + [len(a) for a in runs])):
        cells = [f"{m[:28]} " + "/".join(num(r[i].get(m)) for r in [b, *runs]) for m in unique]
        places = "/".join(str(r[i].get("place", "-")) for r in runs)
        print(f"{i:>3} {b[i]['kernel'][:24]:24} @{places} " + " | ".join(cells))


main()
