#!/usr/bin/env python3
"""What kreplay's tracing costs the application: runs ON the GPU machine, from the repository root.

For a loop of tiny kernels, a loop that synchronises after every step (the bench's sync loop) and
a PyTorch MLP training loop, in this one call with the same binaries: the application alone
(fastest of --repeat), then kreplay with `--kernel-trace` alone, with one counter group (ONE
hardware pass: nothing is snapshotted or replayed, so it is the cost of reading counters, labelled
so; bench/run.py measures replay), and Nsight Compute with the same group on at most
--ncu-launches dispatches (`--launch-count`), with each tracing domain
(`--marker-trace`, `--runtime-trace`, `--memory-copy-trace`, `--memory-allocation-trace`) and
with `--sys-trace` (all of them), each the fastest of --repeat. The cost is read from the
workload's own clock (`dispatch_ms=`: its launch loop, start-up and post-processing left out),
per dispatch and per API call the run recorded (rows of rocpd's `regions` view). Every run's output
is compared with the application's alone.

Prints a table, writes raw numbers to $OUT/trace_cost.json.

Usage: python3 bench/trace_cost.py [--kreplay .gpu-bin/kreplay] [--launches 2000] [--steps 20]
                                   [--repeat 3] [--only tiny,sync,mlp] [--ncu-launches 200]
                                   [--runs=--kernel-trace,...]
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import HERE, app_output, build, databases, timed  # noqa: E402

# One group, ONE hardware pass on GH100 (`kreplay avail pmc-check --chip GH100`): nothing replayed.
ONE_GROUP = ["sm__warps_launched.sum", "smsp__inst_executed.sum"]
ONE_GROUP_LABEL = "one counter group (one pass)"
NCU_LABEL = "ncu, the same group (one pass)"
FLOOR_LABEL = "CUPTI alone"
# The CUPTI-alone run: the application under cupti_floor.cu's injection library, not under kreplay.
FLOOR = "floor"

RUNS = [
    ("--kernel-trace", ["--kernel-trace"]),
    (FLOOR_LABEL, FLOOR),
    (ONE_GROUP_LABEL, ["--pmc", *ONE_GROUP]),
    ("--marker-trace", ["--kernel-trace", "--marker-trace"]),
    ("--runtime-trace", ["--runtime-trace"]),
    ("--memory-copy-trace", ["--kernel-trace", "--memory-copy-trace"]),
    ("--memory-allocation-trace", ["--kernel-trace", "--memory-allocation-trace"]),
    ("--sys-trace", ["--sys-trace"]),
]


def loop_ms(text):
    m = re.search(r"dispatch_ms=([0-9.]+)", text or "")
    return float(m.group(1)) if m else None


def no_counts():
    return {"dispatches": 0, "api_calls": 0, "markers": 0, "copies": 0, "allocations": 0}


def counts(outdir):
    """Rows the run recorded, summed over its processes' databases."""
    out = no_counts()
    queries = {"dispatches": "SELECT COUNT(*) FROM kernels",
               "api_calls": "SELECT COUNT(*) FROM regions WHERE category LIKE 'CUDA\\_%\\_API' ESCAPE '\\'",
               "markers": "SELECT COUNT(*) FROM regions WHERE category LIKE 'MARKER%'",
               "copies": "SELECT COUNT(*) FROM memory_copies",
               "allocations": "SELECT COUNT(*) FROM memory_allocations"}
    for db in databases(outdir):
        con = sqlite3.connect(db)
        for key, sql in queries.items():
            try:
                out[key] += con.execute(sql).fetchone()[0]
            except sqlite3.Error as e:
                out.setdefault("unreadable", []).append(f"{key}: {e}")
        con.close()
    return out


def floor_counts(outdir):
    """The kernel records the CUPTI-alone run's library counted (none when it was not injected)."""
    out = no_counts()
    path = os.path.join(outdir, "kernel_records")
    if os.path.exists(path):
        with open(path) as f:
            out["dispatches"] = int(f.read().strip() or 0)
    return out


def best_of(n, argv, work=None, flags=None):
    """The fastest of n runs by the workload's own clock; under kreplay (flags given) each run
    writes into a folder of its own, and the fastest's folder comes back last."""
    runs = []
    for _ in range(n):
        if flags is None:
            runs.append(timed(argv) + (None,))
            continue
        if flags == FLOOR:
            d = tempfile.mkdtemp(prefix="floor", dir=work)
            env = dict(os.environ, CUDA_INJECTION64_PATH=os.path.join(work, "libcupti_floor.so"),
                       CUPTI_FLOOR_OUT=os.path.join(d, "kernel_records"))
            runs.append(timed(argv[1:], env=env) + (d,))  # argv[0] is kreplay
            continue
        d = tempfile.mkdtemp(prefix="kr", dir=work)
        runs.append(timed([argv[0], *flags, "-f", "rocpd", "-d", d, "-o", "out", "--", *argv[1:]]) + (d,))
    return min(runs, key=lambda r: loop_ms(r[2]) or float("inf"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kreplay", default="target/release/kreplay")
    ap.add_argument("--launches", type=int, default=2000, help="tiny kernels launched by the tiny loop")
    ap.add_argument("--steps", type=int, default=20, help="training steps of the PyTorch MLP")
    ap.add_argument("--repeat", type=int, default=3, help="each run's figure is the fastest of this many")
    ap.add_argument("--only", default="tiny,sync,mlp", help="comma-separated: tiny, sync, mlp")
    ap.add_argument("--runs", default=",".join(label for label, _ in RUNS),
                    help="comma-separated kreplay runs to make (default: every one; e.g. --kernel-trace "
                         "alone, to compare two builds back to back)")
    ap.add_argument("--ncu-launches", type=int, default=200,
                    help="Nsight Compute profiles at most this many dispatches (--launch-count)")
    args = ap.parse_args()
    out = os.environ.get("OUT", tempfile.mkdtemp())
    os.makedirs(out, exist_ok=True)
    kreplay = os.path.abspath(args.kreplay)
    work = tempfile.mkdtemp(prefix="ktrace")
    os.environ["KREPLAY_CACHE_DIR"] = os.path.join(work, "identity-cache")
    exes = build(work)
    build_floor(work)
    loads = {"tiny": (f"tiny kernels x{args.launches}", [exes["tiny"], str(args.launches)]),
             "sync": ("sync loop x70 (a sync every step)", [exes["syncloop"], "70"]),
             "mlp": (f"PyTorch MLP training x{args.steps} steps",
                     [sys.executable, os.path.join(HERE, "workloads", "mlp.py"), str(args.steps)])}
    results = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "machine": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                         stdout=subprocess.PIPE, text=True).stdout.strip(),
               "repeat": args.repeat, "workloads": []}
    # The first kreplay run on a machine fills the driver's compute cache: not in any figure.
    timed([kreplay, "--kernel-trace", "-d", os.path.join(work, "warm"), "--", exes["tiny"], "10"])
    for key in [k.strip() for k in args.only.split(",") if k.strip()]:
        if key not in loads:
            ap.error(f"--only {key!r}: give some of {sorted(loads)}")
        name, argv = loads[key]
        _, rc, stdout, _, _ = best_of(args.repeat, argv)
        base = loop_ms(stdout)
        reference = app_output(stdout)
        row = {"workload": name, "alone": {"loop_ms": base, "rc": rc}, "runs": {}}
        runs = [r.strip() for r in args.runs.split(",") if r.strip()]
        unknown = sorted(set(runs) - {label for label, _ in RUNS})
        if unknown:
            ap.error(f"--runs {unknown}: give some of {[label for label, _ in RUNS]}")
        for label, flags in [(label, flags) for label, flags in RUNS if label in runs]:
            wall, rc, stdout, stderr, d = best_of(args.repeat, [kreplay, *argv], work, flags)
            run = {"loop_ms": loop_ms(stdout), "wall_s": wall, "rc": rc,
                   "output_same": app_output(stdout) == reference}
            run.update(floor_counts(d) if flags == FLOOR else counts(d))
            if run["loop_ms"] is not None and base is not None:
                extra_us = (run["loop_ms"] - base) * 1e3
                if run["dispatches"]:
                    run["us_per_dispatch"] = extra_us / run["dispatches"]
                if run["api_calls"]:
                    run["us_per_api_call"] = extra_us / run["api_calls"]
            if rc != 0 or not run["output_same"]:
                run["tail"] = (stdout[-600:], stderr[-1500:])
            row["runs"][label] = run
            print(name, "|", label, "|", {k: v for k, v in run.items() if k != "tail"}, flush=True)
        if ONE_GROUP_LABEL in row["runs"]:
            row["runs"][NCU_LABEL] = ncu_run(argv, row["runs"][ONE_GROUP_LABEL]["dispatches"], base, reference,
                                             args.ncu_launches, work)
        row["kreplay_own_us_per_dispatch"] = own_cost(row)
        results["workloads"].append(row)
        with open(os.path.join(out, "trace_cost.json"), "w") as f:
            json.dump(results, f, indent=1)
    report(results)


def build_floor(work):
    """bench/workloads/cupti_floor.cu as work/libcupti_floor.so, finding CUPTI where CUDA 13 keeps it.
    Host code only, so built by the host compiler: nvcc would add a fat binary's registration, which
    needs the CUDA runtime."""
    nvcc = os.path.realpath(shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    root = os.path.dirname(os.path.dirname(nvcc))
    libs = [os.path.join(root, d) for d in ("lib64", "targets/x86_64-linux/lib")]
    subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-x", "c++", os.path.join(HERE, "workloads", "cupti_floor.cu"),
                    "-I", os.path.join(root, "include"), *[f"-L{d}" for d in libs], "-lcupti",
                    "-Wl,-rpath=" + ":".join(libs), "-o", os.path.join(work, "libcupti_floor.so")], check=True)


def ncu_run(argv, dispatches, base, reference, launches, work):
    """Nsight Compute with the one group on the first `launches` dispatches: the launch loop's
    extra time over the profiled dispatches."""
    profiled = min(dispatches, launches) if dispatches else launches
    ncu = ["ncu", "--replay-mode", "kernel", "--cache-control", "all", "--clock-control", "none",
           "--metrics", ",".join(ONE_GROUP), "--launch-count", str(profiled), "-f", "-o", os.path.join(work, "ncu")]
    wall, rc, stdout, stderr = timed(ncu + argv)
    run = {"loop_ms": loop_ms(stdout), "wall_s": wall, "rc": rc, "output_same": app_output(stdout) == reference,
           "dispatches": profiled, "api_calls": 0}
    if run["loop_ms"] is not None and base is not None and profiled:
        run["us_per_dispatch"] = (run["loop_ms"] - base) * 1e3 / profiled
    if rc != 0 or not run["output_same"]:
        run["tail"] = (stdout[-600:], stderr[-1500:])
    print("ncu |", {k: v for k, v in run.items() if k != "tail"}, flush=True)
    return run


def report(results):
    print("\n%-34s %-32s %10s %10s %10s %12s %12s %6s" % (
        "workload", "run", "loop ms", "dispatches", "API calls", "us/dispatch", "us/API call", "output"))
    for row in results["workloads"]:
        print("%-34s %-32s %10.2f" % (row["workload"], "alone", row["alone"]["loop_ms"] or float("nan")))
        for label, run in row["runs"].items():
            cells = ["%.2f" % run[k] if run.get(k) is not None else "-" for k in ("us_per_dispatch", "us_per_api_call")]
            print("%-34s %-32s %10s %10d %10d %12s %12s %6s" % (
                "", label, "%.2f" % run["loop_ms"] if run["loop_ms"] is not None else "-", run["dispatches"],
                run["api_calls"], *cells, "same" if run["output_same"] else "DIFF"))
        own = own_cost(row)
        if own is not None:
            print("%-34s %-32s %43s %12.2f" % ("", "kreplay's own: --kernel-trace less CUPTI alone", "", own))


def own_cost(row):
    """kreplay's own cost per dispatch: --kernel-trace's less CUPTI's alone, when both were measured
    and the CUPTI-alone run recorded every dispatch kreplay did."""
    trace, floor = row["runs"].get("--kernel-trace"), row["runs"].get(FLOOR_LABEL)
    if not trace or not floor or floor["dispatches"] != trace["dispatches"]:
        return None
    if trace.get("us_per_dispatch") is None or floor.get("us_per_dispatch") is None:
        return None
    return trace["us_per_dispatch"] - floor["us_per_dispatch"]


if __name__ == "__main__":
    main()
