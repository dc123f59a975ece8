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
Variants (2026-12-02, nineteenth session): several kreplay runs against one ncu run, each a
'|'-separated set of ','-separated items: a kreplay option and its value as two items, KEY=VALUE
for the environment, `pmc=METRIC` for one more group (the groups then go through a window of one
execution, K ranges per profiler start, where a single group runs once per dispatch).
Seen 2026-12-02 (twentieth session), "lts__t_sectors.sum,lts__t_sectors_op_membar.sum,
lts__t_sectors_srcunit_ltcfabric.sum,gpu__time_duration.sum" and "lts__cycles_active.avg,
lts__t_sectors_op_read_lookup_hit.sum": after kreplay's flush (its own context) every kernel but
the first counts ~2,400 more membar sectors, ~1,180 more LTC-fabric sectors and ~240 more L2
active cycles than after ncu's; with --cache-control none the two agree (docs/sections.md).
Since 2026-12-04 each hardware pass is decoded alone, so metrics of one raw counter in groups of
their own passes give one execution each (`sm__cycles_active.sum` in one group,
`sm__cycles_active.avg` in the next, with KREPLAY_PACK_GROUPS=0: execution 0 and a replay); each
row shows the kernel's place in its replay unit (@ per variant, 0 = first).
Usage: python3 bench/probes/per_kernel_metrics.py [bin dir] [N] [groups: ';' between, ',' within]
       [variant|variant...]   (files under $OUT)"""
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
