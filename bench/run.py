#!/usr/bin/env python3
"""kreplay benchmark driver: runs ON the GPU machine, from the repository root, in one call.

Measures, for each workload, the wall time of: the application alone; kreplay kernel replay with
1, 2 and 4 single-pass groups, per dispatch and with `--replay-window auto` (2 and 4 groups),
the 4 groups also with KREPLAY_PACK_GROUPS=0 (one hardware pass per group instead of the groups
packed into shared passes); kreplay application replay (4 groups); Nsight Compute
`--replay-mode kernel --clock-control none` with the same 4 groups' metrics, cache control on and
off. Overhead per dispatch = (wall - wall alone) / profiled dispatches. The 4-group runs and ncu
also run the workload at twice its size: marginal cost per dispatch = (extra wall - the app's own
extra wall) / extra dispatches, in which each tool's fixed start-up cost cancels, and fixed cost =
overhead - marginal x dispatches. A workload that prints `app_s=` (its own clock from its first
CUDA call, as bench/workloads/mlp.py does) also gets an in-app overhead per dispatch, free of its
start-up's noise. Prints a table, writes raw numbers to $OUT/bench.json and a plot to
$OUT/overhead.png.

Usage: python3 bench/run.py [--kreplay target/release/kreplay] [--only SUBSTRING[,SUBSTRING...]]
                            [--repeat N] [--quick]
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GROUPS = [
    ["sm__warps_launched.sum", "smsp__inst_executed.sum"],
    ["sm__warps_launched.sum", "dram__bytes_read.sum"],
    ["sm__warps_launched.sum", "lts__t_sectors.sum"],
    ["sm__warps_launched.sum", "dram__bytes_write.sum"],
]


def build(workdir):
    """Builds the CUDA workloads with nvcc; returns {name: argv}."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    out = {}
    for name, extra in (("inplace", []), ("tiny", []), ("gemm", ["-lcublas"])):
        exe = os.path.join(workdir, name)
        subprocess.run([nvcc, "-O2", "-arch=sm_90", "-o", exe,
                        os.path.join(HERE, "workloads", name + ".cu")] + extra, check=True)
        out[name] = exe
    return out


def workloads(exes):
    mlp = [sys.executable, os.path.join(HERE, "workloads", "mlp.py")]
    return [
        # name, argv, dispatches the app makes (None: count them from kreplay's output), and the
        # same workload twice as long (for the marginal cost of a dispatch)
        ("inplace 64 MiB", [exes["inplace"], "20", "0"], 20, [exes["inplace"], "40", "0"], 40),
        ("inplace + 8 GiB untouched", [exes["inplace"], "20", "8"], 20, [exes["inplace"], "40", "8"], 40),
        ("tiny x50", [exes["tiny"], "50"], 50, [exes["tiny"], "100"], 100),
        # The fixed-cost workload: 2000 dispatches amortise start-up by themselves (no
        # second size); per-dispatch replay with one pass per group (≈ 0.66 s a dispatch) is
        # left out at this size.
        ("tiny x2000", [exes["tiny"], "2000"], 2000, None, None),
        ("cuBLAS SGEMM 4096", [exes["gemm"], "10", "4096"], None, [exes["gemm"], "20", "4096"], None),
        ("PyTorch MLP, 1 step", mlp + ["1"], None, mlp + ["2"], None),
    ]


# --quick: the configurations of the headline comparison (with ncu's two, always run).
QUICK = ("kreplay kernel 4 groups", "kreplay kernel 4 groups, window")

# Runs repeated at twice the size: their marginal cost per dispatch (fixed costs cancel).
MARGINAL = ("kreplay kernel 4 groups", "kreplay kernel 4 groups, window", "ncu kernel 4 groups, cache all")


def timed(argv, env=None, timeout=540):
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    return wall, proc.returncode, proc.stdout


def app_seconds(text):
    """The app's own clock from its first CUDA call to its end, when it prints one (mlp.py's
    `app_s=`): free of Python's start-up, which varies by seconds between runs."""
    m = re.search(r"app_s=([0-9.]+)", text or "")
    return float(m.group(1)) if m else None


def kreplay_argv(kreplay, groups, mode, outdir, extra=()):
    argv = [kreplay]
    for g in groups:
        argv += ["--pmc"] + g
    if mode == "kernel":
        argv += ["--replay-mode", "kernel", "--kernel-replay-beta-enabled"]
    return argv + list(extra) + ["-f", "rocpd", "-d", outdir, "-o", "out", "--"]


def fastest_kreplay(app_argv, kreplay, groups, mode, extra, env, work, repeat):
    """The fastest of `repeat` kreplay runs of the app, each with its own output directory:
    (wall, rc, output, output directory)."""
    tries = []
    for _ in range(repeat):
        d = tempfile.mkdtemp(prefix="kr", dir=work)
        tries.append(timed(kreplay_argv(kreplay, groups, mode, d, extra) + app_argv, env=env) + (d,))
    return min(tries, key=lambda t: t[0])


def replay_costs(outdir):
    """Reads the per-dispatch cost table of kreplay's database (bytes and ns)."""
    dbs = [os.path.join(r, f) for r, _, fs in os.walk(outdir) for f in fs if f.endswith("_results.db")]
    rows = []
    for db in dbs:
        con = sqlite3.connect(db)
        try:
            rows += con.execute("SELECT bytes_snapshotted, snapshot_ns, bytes_restored, restore_ns, passes "
                                "FROM kreplay_replay_cost").fetchall()
        except sqlite3.Error:
            pass
        con.close()
    return rows


def dispatch_count(outdir):
    dbs = [os.path.join(r, f) for r, _, fs in os.walk(outdir) for f in fs if f.endswith("_results.db")]
    n = 0
    for db in dbs:
        con = sqlite3.connect(db)
        n = max(n, con.execute("SELECT COUNT(DISTINCT dispatch_id) FROM rocpd_kernel_dispatch").fetchone()[0])
        con.close()
    return n


def device_copy_speed():
    """Device-to-device copy speed, bytes read + written per second, through PyTorch."""
    try:
        import torch
        a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
        b = torch.empty_like(a)
        for _ in range(3):
            b.copy_(a)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            b.copy_(a)
        end.record()
        torch.cuda.synchronize()
        return 2 * 10 * a.numel() / (start.elapsed_time(end) / 1e3)
    except Exception as e:  # no torch or no GPU: the number is simply missing
        print("device copy speed not measured:", e)
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kreplay", default="target/release/kreplay")
    ap.add_argument("--only", default=None, help="comma-separated substrings: run only the workloads that contain one")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run every configuration N times and keep the fastest (for noisy workloads such as PyTorch's start-up)")
    ap.add_argument("--quick", action="store_true",
                    help="only the headline configurations: alone, kreplay 4 groups (per dispatch and windows), ncu")
    args = ap.parse_args()
    out = os.environ.get("OUT", tempfile.mkdtemp())
    os.makedirs(out, exist_ok=True)
    kreplay = os.path.abspath(args.kreplay)
    work = tempfile.mkdtemp(prefix="kbench")
    exes = build(work)
    # kreplay keeps the GPU's identity between runs (docs/kernel-replay.md): fill a fresh cache
    # once so that every measured run finds it, as every run after a user's first does; the
    # "cold identity cache" configuration measures a run without it.
    os.environ["KREPLAY_CACHE_DIR"] = os.path.join(work, "identity-cache")
    subprocess.run([kreplay, "avail", "pmc-check", GROUPS[0][0]], stdout=subprocess.DEVNULL, check=True)
    cold = dict(os.environ, KREPLAY_CACHE_DIR="off")
    results = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "machine": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                         stdout=subprocess.PIPE, text=True).stdout.strip(),
               "copy_bytes_per_s": device_copy_speed(), "workloads": []}
    ncu_metrics = ",".join(sorted({m for g in GROUPS for m in g}))
    for name, argv, dispatches, argv2, dispatches2 in workloads(exes):
        if args.only and not any(part in name for part in args.only.split(",")):
            continue
        row = {"workload": name, "runs": {}}
        alone = [timed(argv) for _ in range(max(2, args.repeat))]
        row["runs"]["alone"] = {"wall_s": min(a[0] for a in alone)}
        app = [app_seconds(a[2]) for a in alone if app_seconds(a[2]) is not None]
        if app:
            row["runs"]["alone"]["app_s"] = min(app)
        alone2 = min(timed(argv2)[0] for _ in range(max(2, args.repeat))) if argv2 else None
        window = ["--replay-window", "auto"]
        alone1 = ["--replay-window", "1"]  # per-dispatch replay (windows are the default)
        # The 4 groups fit one hardware pass together on GH100, so kreplay packs them (one
        # execution per dispatch); "one pass per group" switches packing off (the rocprofv3
        # way: a configuration change and an execution for every group).
        unpacked = dict(os.environ, KREPLAY_PACK_GROUPS="0")
        configs = [("kreplay kernel 1 group", GROUPS[:1], "kernel", alone1, None),
                   ("kreplay kernel 2 groups", GROUPS[:2], "kernel", alone1, None),
                   ("kreplay kernel 4 groups", GROUPS[:4], "kernel", alone1, None),
                   ("kreplay kernel 4 groups, one pass per group", GROUPS[:4], "kernel", alone1, unpacked),
                   ("kreplay kernel 2 groups, window", GROUPS[:2], "kernel", window, None),
                   ("kreplay kernel 4 groups, window", GROUPS[:4], "kernel", window, None),
                   ("kreplay kernel 4 groups, window, cold identity cache", GROUPS[:4], "kernel", window, cold),
                   ("kreplay kernel 4 groups, window, one pass per group", GROUPS[:4], "kernel", window, unpacked),
                   ("kreplay application 4 groups", GROUPS[:4], "application", [], None)]
        if args.quick:
            configs = [c for c in configs if c[0] in QUICK]
        for label, groups, mode, extra, env in configs:
            if (extra is alone1 or mode == "application") and dispatches and dispatches >= 1000:
                # Per-dispatch replay (opt-in) and application replay (one counter range per
                # kernel in every run) are measured on the other workloads; at this size each
                # would take minutes of device time.
                row["runs"][label] = {"skipped": "measured on the smaller workloads (minutes of device time at this size)"}
                continue
            run_args = (kreplay, groups, mode, extra, env, work, args.repeat)
            wall, rc, text, d = fastest_kreplay(argv, *run_args)
            costs = replay_costs(d)
            n = dispatches or dispatch_count(d)
            dispatches = dispatches or n
            row["runs"][label] = {"wall_s": wall, "rc": rc, "dispatches": n, "app_s": app_seconds(text),
                                  "bytes_snapshotted": sum(c[0] or 0 for c in costs),
                                  "snapshot_ns": sum(c[1] or 0 for c in costs),
                                  "bytes_restored": sum(c[2] or 0 for c in costs),
                                  "restore_ns": sum(c[3] or 0 for c in costs)}
            if rc != 0:
                row["runs"][label]["tail"] = text[-2000:]
            # With windows, the app's last line says what closed them (what keeps them short).
            closed = [l for l in text.splitlines() if "replay windows closed by:" in l]
            if closed:
                row["runs"][label]["windows"] = closed[-1]
                print(row["workload"], "|", label, "|", closed[-1])
            if label in MARGINAL and argv2:
                wall2, rc2, _, d2 = fastest_kreplay(argv2, *run_args)
                n2 = dispatches2 or dispatch_count(d2)
                dispatches2 = dispatches2 or n2
                row["runs"][label].update(wall2_s=wall2, rc2=rc2, dispatches2=n2)
        for cache in ("all", "none"):
            rep = os.path.join(work, "ncu_%s" % cache)
            ncu = ["ncu", "--replay-mode", "kernel", "--clock-control", "none",
                   "--cache-control", cache, "--metrics", ncu_metrics, "-f", "-o", rep]
            wall, rc, text = min((timed(ncu + argv) for _ in range(args.repeat)), key=lambda t: t[0])
            label = "ncu kernel 4 groups, cache %s" % cache
            row["runs"][label] = {"wall_s": wall, "rc": rc, "app_s": app_seconds(text)}
            if rc != 0:
                row["runs"][label]["tail"] = text[-2000:]
            if label in MARGINAL and argv2:
                wall2, rc2, _ = min((timed(ncu + argv2) for _ in range(args.repeat)), key=lambda t: t[0])
                row["runs"][label].update(wall2_s=wall2, rc2=rc2, dispatches2=dispatches2)
        row["dispatches"] = dispatches
        row["dispatches2"] = dispatches2
        base = row["runs"]["alone"]["wall_s"]
        if alone2 is not None:
            row["runs"]["alone"]["wall2_s"] = alone2
        for run in row["runs"].values():
            if "wall_s" not in run:
                continue
            if dispatches:
                run["overhead_ms_per_dispatch"] = (run["wall_s"] - base) / dispatches * 1e3
                app_base = row["runs"]["alone"].get("app_s")
                if run.get("app_s") is not None and app_base is not None:
                    run["app_overhead_ms_per_dispatch"] = (run["app_s"] - app_base) / dispatches * 1e3
            # Marginal: the extra dispatches of the longer run, its extra time over the app's own.
            if dispatches and dispatches2 and dispatches2 > dispatches and "wall2_s" in run and run is not row["runs"]["alone"]:
                extra = (run["wall2_s"] - run["wall_s"]) - (alone2 - base)
                run["marginal_ms_per_dispatch"] = extra / (dispatches2 - dispatches) * 1e3
                run["fixed_s"] = (run["wall_s"] - base) - run["marginal_ms_per_dispatch"] * dispatches / 1e3
        results["workloads"].append(row)
        with open(os.path.join(out, "bench.json"), "w") as f:
            json.dump(results, f, indent=1)
    report(results, out)


def report(results, out):
    print("\n%-28s %-50s %8s %12s %12s %8s %12s" % ("workload", "run", "wall s", "ms/dispatch", "marginal ms", "fixed s", "in-app ms"))
    for row in results["workloads"]:
        for label, run in row["runs"].items():
            if "wall_s" not in run:
                print("%-28s %-50s %s" % (row["workload"][:28], label, run.get("skipped", "-")))
                continue
            cells = ["%.2f" % run[k] if k in run else "-" for k in ("overhead_ms_per_dispatch", "marginal_ms_per_dispatch", "fixed_s", "app_overhead_ms_per_dispatch")]
            print("%-28s %-50s %8.2f %12s %12s %8s %12s" % (row["workload"][:28], label, run["wall_s"], *cells))
        ncu = row["runs"].get("ncu kernel 4 groups, cache all", {})
        for label, what in (("kreplay kernel 4 groups", "ncu / kreplay (4 groups)"),
                            ("kreplay kernel 4 groups, window", "ncu / kreplay window (4 groups)"),
                            ("kreplay kernel 4 groups, one pass per group", "ncu / kreplay (1 pass per group)")):
            run = row["runs"].get(label, {})
            ratios = []
            for key in ("overhead_ms_per_dispatch", "marginal_ms_per_dispatch", "app_overhead_ms_per_dispatch"):
                k, n = run.get(key), ncu.get(key)
                ratios.append("%.1fx" % (n / k) if k and n and k > 0 else "-")
            print("%-28s %-50s %8s %12s %12s %8s %12s" % ("", what, "", ratios[0], ratios[1], "", ratios[2]))
    if results.get("copy_bytes_per_s"):
        print("device copy speed: %.2f TB/s (read + written)" % (results["copy_bytes_per_s"] / 1e12))
    try:
        from plot import plot
        plot([results], os.path.join(out, "overhead.png"))
    except Exception as e:  # no matplotlib there: the numbers are in bench.json all the same
        print("no plot:", e)

if __name__ == "__main__":
    main()
