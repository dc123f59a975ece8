#!/usr/bin/env python3
"""How kreplay's time and memory grow with the run: needs no GPU. Runs the reference device's app
(kreplay-sim-app, two counter groups in kernel replay, 5 dispatches per iteration, so two pass
records per dispatch) under the release `kreplay` at growing dispatch counts, split over one or
several processes, one output format per run; then `kreplay convert` of the run's database into
each format alone. Records for each run the application phase and the post-processing apart (the
apps are started through a shell that notes the moment the last one ended), the post-processing
rate in pass records per second, the peak resident memory of kreplay and of the largest app
process, the size of what was written, and how long a plain buffered writer takes to put as
many bytes on the same disk just after (the disk's pace, which post-processing is compared
with). Each run starts once what the runs before it wrote is on the disk (sync).

Peak memory: kreplay's own high-water mark (VmHWM, polled every 20 ms while it runs; for
convert also wait4's figure, which has no app to include), and each app's under /usr/bin/time.
CPU (the JSON lines' kreplay_cpu_s): kreplay's own user + system time, all its threads, its
children excluded, as last polled.

Usage: python3 bench/scale.py [--bin target/release] [--dispatches 10000,100000,1000000]
                              [--processes 1,4] [--formats rocpd,csv,json,pftrace]
                              [--convert csv,json,pftrace,rocpd] [--json OUT.json]
                              [--flags=--sys-trace] [--repeat 1]
       python3 bench/scale.py --table OUT.json     (the table of an earlier run, nothing run)
--flags: extra kreplay options, comma-separated (e.g. --flags=--sys-trace for a traced run).
The record counts (and so the rates) come from the rocpd run's database: without rocpd among
--formats the rates are left blank.
--repeat N: each `convert` N times, its row the figures of the run with the median time (all
times kept in the JSON as post_s_runs): this VM's speed moves by up to half from one minute to the
next. A run with its application (minutes at 10^6) is made once.
Build first: cargo build --release. Prints one table; --json keeps every figure.
"""
import argparse
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

GROUPS = [["sim__warps_launched.sum"], ["sim__bytes_written.sum"]]
DISPATCHES_PER_ITERATION = 5
TIME = "/usr/bin/time"


def own_peak_mib(pid, stop, result):
    """Polls the process's own high-water mark (VmHWM, its children excluded) into result[0],
    and its own CPU time (user + system of all its threads, children excluded) into result[1],
    until stopped."""
    path = f"/proc/{pid}/status"
    tick = os.sysconf("SC_CLK_TCK")
    while not stop.is_set():
        try:
            for line in open(path):
                if line.startswith("VmHWM:"):
                    result[0] = max(result[0], int(line.split()[1]) / 1024.0)
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            result[1] = max(result[1], (int(fields[11]) + int(fields[12])) / tick)
        except (OSError, ValueError, IndexError):
            pass
        stop.wait(0.02)


def run_measured(argv, cwd):
    """Runs argv, returns (the wall-clock time it started, seconds, returncode, stderr, peak RSS
    in MiB of it and its children, its own peak RSS in MiB, its own CPU seconds as last polled)."""
    env = dict(os.environ, KREPLAY_PROGRESS="0")
    # What earlier runs wrote reaches the disk first, so that its write-back is not timed here
    # (nor counted in the run's phases: they are measured from `started`, after it).
    os.sync()
    started = time.time()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stop, own = threading.Event(), [0.0, 0.0]
    poller = threading.Thread(target=own_peak_mib, args=(proc.pid, stop, own))
    poller.start()
    stderr = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    stop.set()
    poller.join()
    proc.stderr.close()
    # ru_maxrss is in KiB on Linux.
    return (started, seconds, os.waitstatus_to_exitcode(status), stderr, usage.ru_maxrss / 1024.0,
            own[0], own[1])


def folder_bytes(path):
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files)


def plain_write_s(nbytes, work):
    """Seconds a plain buffered writer takes to put nbytes on the disk: a new file in work
    written 1 MiB at a time from one block, then fsync'd (written back before it starts). The
    disk's pace for an output's bytes, which its post-processing is compared with; kreplay itself
    does not wait for its last bytes to reach the disk."""
    if nbytes <= 0:
        return None
    block = os.urandom(2**20)
    path = os.path.join(work, "plain-writer.bin")
    os.sync()
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        left = nbytes
        while left > 0:
            f.write(block if left >= len(block) else block[:left])
            left -= len(block)
        f.flush()
        os.fsync(f.fileno())
    seconds = time.perf_counter() - t0
    os.remove(path)
    return round(seconds, 3)


def pass_records(database):
    """How many dispatch pass records a database holds (every process of it)."""
    with sqlite3.connect(database) as db:
        return sum(db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0]
                   for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                          "AND name LIKE 'kreplay_dispatch_pass%'"))


def one_run(kreplay, app, dispatches, processes, fmt, work, flags=()):
    iterations = max(1, dispatches // (DISPATCHES_PER_ITERATION * processes))
    out = os.path.join(work, f"{fmt}-{dispatches}-{processes}")
    os.makedirs(out)
    ended = os.path.join(out, "app-ended")
    # The wrapper starts the apps side by side, each under time(1), and notes when the last ended.
    apps = " & ".join(f"{TIME} -f %M -o '{out}/app-peak-{i}' '{app}' --iterations {iterations}"
                      for i in range(processes))
    script = f"{apps}; wait; date +%s.%N > '{ended}'"
    argv = [kreplay]
    for g in GROUPS:
        argv += ["--pmc", *g]
    argv += ["--replay-mode", "kernel", "--kernel-replay-beta-enabled", *flags, "-f", fmt,
             "-d", os.path.join(out, "o"), "-o", "r", "--", "sh", "-c", script]
    began, seconds, code, stderr, peak, own, cpu = run_measured(argv, out)
    try:
        app_end = float(open(ended).read().strip())
    except (OSError, ValueError):
        app_end = began + seconds
    app_peaks = []
    for path in glob.glob(os.path.join(out, "app-peak-*")):
        try:
            app_peaks.append(int(open(path).read().split()[-1]) / 1024.0)
        except (OSError, ValueError, IndexError):
            pass
    app_peak = max(app_peaks, default=0.0)
    row = {
        "what": fmt, "dispatches": iterations * DISPATCHES_PER_ITERATION * processes,
        "processes": processes, "rc": code, "wall_s": round(seconds, 2),
        "app_s": round(app_end - began, 2), "post_s": round(began + seconds - app_end, 2),
        "kreplay_peak_mib": round(own, 1), "tree_peak_mib": round(peak, 1),
        "kreplay_cpu_s": round(cpu, 2),
        "app_peak_mib": round(app_peak, 1),
        "written_mib": round(folder_bytes(os.path.join(out, "o")) / 2**20, 1),
        "plain_write_s": plain_write_s(folder_bytes(os.path.join(out, "o")), work),
    }
    if code != 0:
        row["stderr"] = stderr[-2000:]
    return row, out


def convert_runs(kreplay, database, fmt, work, repeat):
    """convert_run repeat times: the row of the run with the median time, every time kept."""
    runs = sorted((convert_run(kreplay, database, fmt, work) for _ in range(repeat)),
                  key=lambda r: (r["rc"] == 0, r["post_s"]))
    row = dict(runs[len(runs) // 2]) if all(r["rc"] == 0 for r in runs) else runs[0]
    if repeat > 1:
        row["post_s_runs"] = [r["post_s"] for r in runs]
        row["kreplay_peak_mib"] = max(r["kreplay_peak_mib"] for r in runs)
    return row


def convert_run(kreplay, database, fmt, work):
    dest = os.path.join(work, f"convert-{fmt}")
    argv = [kreplay, "convert", "-i", database, "-f", fmt, "-d", dest, "-o", "c"]
    _, seconds, code, stderr, peak, own, cpu = run_measured(argv, work)
    written = folder_bytes(dest)
    # The output goes before the plain writer puts as many bytes on the disk (10^7 dispatches'
    # JSON is 22 GB: both at once may not fit).
    shutil.rmtree(dest, ignore_errors=True)
    row = {"what": f"convert -f {fmt}", "rc": code, "post_s": round(seconds, 2), "kreplay_cpu_s": round(cpu, 2),
           "kreplay_peak_mib": round(max(own, peak), 1), "written_mib": round(written / 2**20, 1),
           "plain_write_s": plain_write_s(written, work)}
    if code:
        row["stderr"] = stderr[-2000:]
    return row


def times(seconds, plain):
    """How many times the disk's time (the plain writer's) post-processing took, to one decimal."""
    return round(seconds / plain, 1) if plain else None


def rate(records, seconds):
    return round(records / seconds) if records and seconds and seconds > 0 else None


def print_table(rows):
    """The markdown table of docs/BENCHMARKS.md. *records/CPU s* is `convert`'s only: its pass
    records over kreplay's CPU time, what one core would write (a run's CPU includes the
    application phase)."""
    print("| dispatches | processes | output | application s | post-processing s | pass records/s "
          "| records/CPU s | kreplay peak MiB | app peak MiB | written MiB | disk s | × disk |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    blank = lambda v: "" if v is None else v
    for r in sorted(rows, key=lambda r: (r["dispatches"], r["processes"])):
        peak = r["kreplay_peak_mib"]
        fail = "" if r["rc"] == 0 else f" (exit {r['rc']})"
        per_cpu = rate(r.get("records"), r.get("kreplay_cpu_s")) if r["what"].startswith("convert") else None
        print(f"| {r['dispatches']} | {r['processes']} | {r['what']}{fail} | {blank(r.get('app_s'))} | "
              f"{r['post_s']} | {blank(r.get('records_per_s'))} | {blank(per_cpu)} | {peak} | "
              f"{blank(r.get('app_peak_mib'))} | {r['written_mib']} | {blank(r.get('plain_write_s'))} | "
              f"{blank(times(r['post_s'], r.get('plain_write_s')))} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default="target/release")
    parser.add_argument("--dispatches", default="10000,100000,1000000")
    parser.add_argument("--processes", default="1,4")
    parser.add_argument("--formats", default="rocpd,csv,json,pftrace")
    parser.add_argument("--convert", default="csv,json,pftrace,rocpd",
                        help="formats `kreplay convert` writes from the rocpd run's database, one at a time")
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--flags", default="",
                        help="extra kreplay options, comma-separated (e.g. --flags=--sys-trace)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="each convert this many times, its row the median run's (default 1)")
    parser.add_argument("--table", metavar="OUT.json",
                        help="print the table of an earlier run's --json file, running nothing")
    args = parser.parse_args()
    if args.table:
        with open(args.table) as f:
            print_table(json.load(f)["rows"])
        return
    kreplay = os.path.abspath(os.path.join(args.bin, "kreplay"))
    app = os.path.abspath(os.path.join(args.bin, "kreplay-sim-app"))
    for path in (kreplay, app, TIME):
        if not os.path.exists(path):
            sys.exit(f"missing {path}: build with `cargo build --release` (or pass --bin); "
                     f"time(1) comes with the `time` package")
    formats = args.formats.split(",")
    # The rocpd run first: its database gives the record count and convert's input.
    formats.sort(key=lambda f: f != "rocpd")
    rows = []
    work = tempfile.mkdtemp(prefix="kreplay-scale-")
    try:
        for dispatches in [int(d) for d in args.dispatches.split(",")]:
            for processes in [int(p) for p in args.processes.split(",")]:
                records = None
                for fmt in formats:
                    row, out = one_run(kreplay, app, dispatches, processes, fmt, work,
                                       [f for f in args.flags.split(",") if f])
                    if fmt == "rocpd" and row["rc"] == 0:
                        database = os.path.join(out, "o", "r_results.db")
                        records = pass_records(database)
                    row.update(records=records, records_per_s=rate(records, row["post_s"]))
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    if fmt == "rocpd" and records is not None:
                        for conv in [c for c in args.convert.split(",") if c]:
                            crow = convert_runs(kreplay, database, conv, work, max(1, args.repeat))
                            crow.update(dispatches=row["dispatches"], processes=processes,
                                        records=records, records_per_s=rate(records, crow["post_s"]))
                            rows.append(crow)
                            print(json.dumps(crow), flush=True)
                    shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}, f, indent=1)
    sys.exit(1 if any(r["rc"] != 0 for r in rows) else 0)


if __name__ == "__main__":
    main()
