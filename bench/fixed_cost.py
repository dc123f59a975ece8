#!/usr/bin/env python3
"""Where kreplay's fixed, once-per-process cost goes: runs ON the GPU machine, from the
repository root. Times the in-place workload (a few dispatches) alone, with the injected library
and no counters, with one group, with 4 groups, and through the kreplay CLI; prints the phase
times the library (KREPLAY_DEBUG) and the CLI (KREPLAY_LOG=debug) report.

Usage: python3 bench/fixed_cost.py [--bin target/release] [--dispatches 3] [--workload inplace|gemm|mlp]
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

from run import HEADLINE as GROUPS  # the benchmark's headline groups (bench/run.py)

HERE = os.path.dirname(os.path.abspath(__file__))


def config(groups, db):
    return json.dumps({
        "groups": [{"counters": [{"requested": m, "metric": m} for m in g]} for g in groups],
        "mode": "kernel_replay" if len(groups) > 1 else "single",
        "filter": {"include_regex": None, "exclude_regex": None, "iteration_range": None},
        "kernel_trace": True,
        "database_path": db,
        "drain_timeout_ms": 60000,
        "log_level": "warning",
    })


def timed(argv, env):
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    return time.perf_counter() - t0, p.returncode, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release")
    ap.add_argument("--dispatches", default="3")
    ap.add_argument("--workload", default="inplace", choices=("inplace", "gemm", "mlp"))
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kfixed")
    if args.workload == "mlp":
        # PyTorch: --dispatches is the number of training steps here.
        import sys
        app = [sys.executable, os.path.join(HERE, "workloads", "mlp.py"), args.dispatches]
    else:
        exe = os.path.join(work, args.workload)
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        libs = ["-lcublas"] if args.workload == "gemm" else []
        subprocess.run([nvcc, "-O2", "-arch=sm_90", "-o", exe, os.path.join(HERE, "workloads", args.workload + ".cu")] + libs, check=True)
        app = [exe, args.dispatches, "0" if args.workload == "inplace" else "4096"]
    inject = os.path.abspath(os.path.join(args.bin, "libkreplay_inject.so"))
    kreplay = os.path.abspath(os.path.join(args.bin, "kreplay"))
    base = dict(os.environ, KREPLAY_DEBUG="1", KREPLAY_LOG="debug")
    runs = [("alone", app, dict(os.environ)), ("alone", app, dict(os.environ))]
    for label, groups in (("inject, kernel trace only", []), ("inject, 1 group", GROUPS[:1]),
                          ("inject, 4 groups (packed)", GROUPS)):
        env = dict(base, CUDA_INJECTION64_PATH=inject, KREPLAY_CONFIG=config(groups, os.path.join(work, f"{len(groups)}_%pid%.db")))
        runs.append((label, app, env))
    # The CLI runs share a fresh identity cache: the first reads the GPU and fills it, the
    # others find it (the last one with the cache off, for comparison).
    cache = dict(base, KREPLAY_CACHE_DIR=os.path.join(work, "cache"))
    for label, groups, env in (("kreplay CLI, 1 group, cold cache", GROUPS[:1], cache),
                               ("kreplay CLI, 1 group", GROUPS[:1], cache),
                               ("kreplay CLI, 4 groups", GROUPS, cache),
                               ("kreplay CLI, 4 groups, cache off", GROUPS, dict(base, KREPLAY_CACHE_DIR="off"))):
        argv = [kreplay]
        for g in groups:
            argv += ["--pmc"] + g
        if len(groups) > 1:
            argv += ["--replay-mode", "kernel", "--kernel-replay-beta-enabled"]
        argv += ["-f", "rocpd", "-d", os.path.join(work, label.replace(" ", "_").replace(",", "")), "-o", "out", "--"] + app
        runs.append((label, argv, env))
    for label, argv, env in runs:
        wall, rc, err = timed(argv, env)
        phases = [l for l in err.splitlines() if ("[debug]" in l or "DEBUG" in l or "hardware pass" in l or "closed by" in l)
                  and not any(skip in l for skip in ("module loaded:", "tracking ", "no loaded cubin"))]
        print(f"{label:32s} rc={rc} wall {wall * 1e3:8.1f} ms")
        for line in phases:
            print("    " + line.strip()[:160])


if __name__ == "__main__":
    main()
