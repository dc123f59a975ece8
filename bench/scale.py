#!/usr/bin/env python3
"""How kreplay's time and memory grow with the run: needs no GPU. Runs the reference device's app
(kreplay-sim-app, two counter groups in kernel replay, 5 dispatches per iteration) under the
release `kreplay` at growing dispatch counts, one output format per run, and `kreplay convert` of
the database; records for each run the application phase and the post-processing apart (the app
is started through a shell that notes the moment it ended), the peak resident memory of the run's
largest process (kreplay's: wait4 reports the largest of kreplay and the processes it waited for,
and the reference app stays near 10 MiB), and the size of what was written.

Usage: python3 bench/scale.py [--bin target/release] [--dispatches 10000,100000,1000000]
                              [--formats rocpd,csv,json,pftrace] [--processes 1] [--json OUT.json]
Build first: cargo build --release. Prints one table; --json keeps every figure.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

GROUPS = [["sim__warps_launched.sum"], ["sim__bytes_written.sum"]]
DISPATCHES_PER_ITERATION = 5


def run_measured(argv, env, cwd):
    """Runs argv, returns (seconds, returncode, stderr, peak RSS of that process in MiB)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    stderr = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    # ru_maxrss is in KiB on Linux; wait4 reports the largest of the child and the descendants it
    # waited for.
    return seconds, code, stderr, usage.ru_maxrss / 1024.0


def folder_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(root, name))
    return total


def one_run(kreplay, app, dispatches, fmt, processes, work):
    iterations = max(1, dispatches // DISPATCHES_PER_ITERATION)
    out = os.path.join(work, f"{fmt}-{dispatches}-{processes}")
    os.makedirs(out)
    ended = os.path.join(out, "app-ended")
    # The wrapper starts `processes` apps side by side and notes when the last one ended.
    apps = " & ".join([f"'{app}' --iterations {iterations}"] * processes)
    script = f"{apps}; wait; date +%s.%N > '{ended}'"
    argv = [kreplay]
    for g in GROUPS:
        argv += ["--pmc", *g]
    argv += ["--replay-mode", "kernel", "--kernel-replay-beta-enabled", "-f", fmt,
             "-d", os.path.join(out, "o"), "-o", "r", "--", "sh", "-c", script]
    env = dict(os.environ, KREPLAY_PROGRESS="0")
    began = time.time()
    seconds, code, stderr, peak = run_measured(argv, env, out)
    finished = began + seconds
    try:
        app_end = float(open(ended).read().strip())
    except (OSError, ValueError):
        app_end = finished
    row = {
        "format": fmt, "dispatches": iterations * DISPATCHES_PER_ITERATION * processes,
        "processes": processes, "rc": code, "wall_s": round(seconds, 2),
        "app_s": round(app_end - began, 2), "post_s": round(finished - app_end, 2),
        "kreplay_peak_mib": round(peak, 1), "written_mib": round(folder_bytes(os.path.join(out, "o")) / 2**20, 1),
    }
    if code != 0:
        row["stderr"] = stderr[-2000:]
    return row, out


def convert_run(kreplay, out, work):
    dbs = [os.path.join(root, f) for root, _, files in os.walk(os.path.join(out, "o"))
           for f in files if f.endswith(".db")]
    dest = os.path.join(work, "convert-" + os.path.basename(out))
    argv = [kreplay, "convert", "-i", *dbs, "-f", "csv", "json", "-d", dest]
    seconds, code, stderr, peak = run_measured(argv, dict(os.environ, KREPLAY_PROGRESS="0"), work)
    return {"format": "convert csv+json", "rc": code, "post_s": round(seconds, 2),
            "kreplay_peak_mib": round(peak, 1), "written_mib": round(folder_bytes(dest) / 2**20, 1),
            **({"stderr": stderr[-2000:]} if code else {})}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default="target/release")
    parser.add_argument("--dispatches", default="10000,100000,1000000")
    parser.add_argument("--formats", default="rocpd,csv,json,pftrace")
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args()
    kreplay = os.path.abspath(os.path.join(args.bin, "kreplay"))
    app = os.path.abspath(os.path.join(args.bin, "kreplay-sim-app"))
    for path in (kreplay, app):
        if not os.path.exists(path):
            sys.exit(f"missing {path}: build it with `cargo build --release` (or pass --bin)")
    rows = []
    work = tempfile.mkdtemp(prefix="kreplay-scale-")
    try:
        for dispatches in [int(d) for d in args.dispatches.split(",")]:
            for fmt in args.formats.split(","):
                row, out = one_run(kreplay, app, dispatches, fmt, args.processes, work)
                rows.append(row)
                print(json.dumps(row), flush=True)
                if fmt == "rocpd":
                    conv = convert_run(kreplay, out, work)
                    conv.update(dispatches=row["dispatches"], processes=args.processes)
                    rows.append(conv)
                    print(json.dumps(conv), flush=True)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("| dispatches | processes | output | application s | post-processing s | kreplay peak MiB | written MiB | rc |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['dispatches']} | {r['processes']} | {r['format']} | {r.get('app_s', '')} | {r['post_s']} | "
              f"{r['kreplay_peak_mib']} | {r['written_mib']} | {r['rc']} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}, f, indent=1)
    sys.exit(1 if any(r["rc"] != 0 for r in rows) else 0)


if __name__ == "__main__":
    main()
