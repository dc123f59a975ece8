#!/usr/bin/env python3
"""kreplay benchmark driver: runs ON the GPU machine, from the repository root.

A kernel-replay benchmark measures replay: the headline metric set is four counter groups that
each fit one hardware pass and together need three on GH100 (SASS instruction counts,
shared-memory bank conflicts, L1 requests, DRAM and L2 sectors; `kreplay avail pmc-check --chip
GH100` says so). For every workload, in this one call and with the same binaries:
  alone (fastest of two), kreplay kernel replay with its default windows (and L2 flushed before
  every measured execution, `--cache-control all`, the default of both tools), the same with
  `--cache-control none`, kreplay `--replay-window 1` (each dispatch replayed alone), Nsight
  Compute `--replay-mode kernel --cache-control all --clock-control none` with the same metrics,
  and, as a secondary row labelled as such, kreplay
  with a set of four groups that fits ONE hardware pass (nothing is replayed there).
Overhead per dispatch = (wall - wall alone) / profiled dispatches; a workload that prints
`app_s=` (its own clock from its first CUDA call: PyTorch's start-up varies by seconds) also
gets an in-app overhead. On workloads of many dispatches Nsight Compute profiles the first
--ncu-launches of them (`--launch-count`), and its overhead is divided by that many. Every run's
output is compared with the workload's own output alone (timings left out). kreplay's report
gives configuration changes, windows and dispatches per window, time per execution, and bytes
snapshotted and restored with their bandwidth.

Prints a table, writes raw numbers to $OUT/bench.json.

Usage: python3 bench/run.py [--kreplay .gpu-bin/kreplay] [--only SUBSTRING[,SUBSTRING...]]
                            [--ncu-launches 200] [--skip-window-1] [--set full]
With --set NAME (issue 18): Nsight Compute's set NAME for both tools instead of the headline
groups, kreplay with its default windows only.
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

HERE = os.path.dirname(os.path.abspath(__file__))
# Four groups, each one pass, three hardware passes together on GH100 (packed [0+2, 1, 3]).
HEADLINE = [
    ["sm__warps_launched.sum", "smsp__inst_executed.sum"],
    ["smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"],
    ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "dram__sectors_read.sum", "lts__t_sectors_op_read.sum"],
    ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "lts__t_sectors_op_write.sum"],
]
# Secondary: four groups that fit ONE hardware pass together (no replay happens).
ONE_PASS = [
    ["sm__warps_launched.sum", "smsp__inst_executed.sum"],
    ["sm__warps_launched.sum", "dram__bytes_read.sum"],
    ["sm__warps_launched.sum", "lts__t_sectors.sum"],
    ["sm__warps_launched.sum", "dram__bytes_write.sum"],
]


def build(workdir):
    """Builds the CUDA workloads with nvcc; returns {name: path}."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    out = {}
    for name, extra in (("inplace", []), ("tiny", []), ("gemm", ["-lcublas"]), ("syncloop", []),
                        ("graphloop", []), ("solver", ["-lcublas"])):
        exe = os.path.join(workdir, name)
        subprocess.run([nvcc, "-O2", "-arch=sm_90", "-o", exe,
                        os.path.join(HERE, "workloads", name + ".cu")] + extra, check=True)
        out[name] = exe
    return out


def workloads(exes):
    py = lambda name, *args: [sys.executable, os.path.join(HERE, "workloads", name), *args]
    return [
        # name, argv
        ("sync loop (kernels + cudaDeviceSynchronize + D2D copy) x70", [exes["syncloop"], "70"]),
        ("CG solver, cuBLAS dots to the host, 30 it", [exes["solver"], "30"]),
        # The sync loop's iteration as a CUDA graph launched 70 times: kreplay runs its kernel
        # nodes as dispatches, Nsight Compute profiles them (--graph-profiling node, its default).
        ("graph loop (a 4-kernel CUDA graph + cudaStreamSynchronize) x70", [exes["graphloop"], "70"]),
        ("ResNet-18 training step (cuDNN)", py("resnet.py", "1")),
        ("GPT-2 2 layers training step", py("gpt2.py", "1")),
        ("PyTorch MLP training step", py("mlp.py", "1")),
        ("cuBLAS SGEMM 4096 x10", [exes["gemm"], "10", "4096"]),
        # The same at three times the dispatches: its difference to x10 is what a GEMM costs
        # beyond the run's fixed start-up.
        ("cuBLAS SGEMM 4096 x30", [exes["gemm"], "30", "4096"]),
        ("tiny kernels x2000", [exes["tiny"], "2000"]),
        ("in-place 64 MiB x20", [exes["inplace"], "20", "0"]),
    ]


def timed(argv, env=None, timeout=560):
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)
    return time.perf_counter() - t0, proc.returncode, proc.stdout, proc.stderr


def app_seconds(text):
    m = re.search(r"app_s=([0-9.]+)", text or "")
    return float(m.group(1)) if m else None


def app_output(text):
    """The workload's own output, timings left out (they differ run to run)."""
    return [re.sub(r"(dispatch_ms|app_s)=[0-9.]+", "", l) for l in (text or "").splitlines()
            if l.strip() and not l.startswith("==") and not l.startswith("kreplay")]


def kreplay_argv(kreplay, groups, outdir, extra=()):
    """`groups` is a list of --pmc groups, or ("set", NAME) for Nsight Compute's set NAME."""
    argv = [kreplay]
    if isinstance(groups, tuple):
        argv += ["--set", groups[1]]
        groups = []
    for g in groups:
        argv += ["--pmc"] + g
    return argv + ["--replay-mode", "kernel", "--kernel-replay-beta-enabled", *extra,
                   "-f", "rocpd", "-d", outdir, "-o", "out", "--"]


def databases(outdir):
    return [os.path.join(r, f) for r, _, fs in os.walk(outdir) for f in fs if f.endswith("_results.db")]


def report_numbers(outdir, stderr):
    """kreplay's own report: dispatches, executions, bytes and times, windows, configuration changes."""
    n, executions, snap_b, snap_ns, rest_b, rest_ns, exec_ns, timing_ns = 0, 0, 0, 0, 0, 0, 0, 0
    for db in databases(outdir):
        con = sqlite3.connect(db)
        try:
            n = max(n, con.execute("SELECT COUNT(DISTINCT dispatch_id) FROM rocpd_kernel_dispatch").fetchone()[0])
            for passes, bs, sns, br, rns, pass_ns, tns in con.execute(
                    "SELECT passes, bytes_snapshotted, snapshot_ns, bytes_restored, restore_ns, pass_ns, "
                    "timing_execution_ns FROM kreplay_replay_cost"):
                times = [t for t in json.loads(pass_ns or "[]") if t]
                executions += len(times)
                exec_ns += sum(times)
                snap_b += bs or 0
                snap_ns += sns or 0
                rest_b += br or 0
                rest_ns += rns or 0
                timing_ns += tns or 0
        except sqlite3.Error as e:
            print("report of", db, "unreadable:", e)
        con.close()
    out = {"dispatches": n, "executions": executions,
           "ms_per_execution": exec_ns / executions / 1e6 if executions else None,
           "bytes_snapshotted": snap_b, "snapshot_GBps": snap_b / snap_ns if snap_ns else None,
           "bytes_restored": rest_b, "restore_GBps": rest_b / rest_ns if rest_ns else None,
           "timing_execution_ms": timing_ns / 1e6}
    windows = re.search(r"replay windows closed by: (.*?); (\d+) dispatches in (\d+) windows \(([0-9.]+) per window\)(.*)", stderr)
    if windows:
        out.update(windows_closed_by=windows.group(1)[:300], windows=int(windows.group(3)),
                   dispatches_per_window=float(windows.group(4)), window_tail=windows.group(5)[:200])
    changes = re.search(r"in (\d+) hardware pass\(es\) \[([^\]]*)\]; (\d+) configuration change", stderr)
    if changes:
        out.update(hardware_passes=int(changes.group(1)), packing=changes.group(2),
                   configuration_changes=int(changes.group(3)))
    warnings = [l[9:][:200] for l in stderr.splitlines() if l.startswith("kreplay: ") and "warning" in l.lower()]
    if warnings:
        out["warnings"] = warnings[:5]
    return out


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
    ap.add_argument("--ncu-launches", type=int, default=200,
                    help="Nsight Compute profiles at most this many dispatches of a workload (--launch-count)")
    ap.add_argument("--skip-window-1", default="tiny",
                    help="comma-separated substrings: workloads whose --replay-window 1 run is skipped")
    ap.add_argument("--with-env", action="append", default=[], metavar="NAME=VALUE",
                    help="one more kreplay run per workload (default windows, the headline groups) with "
                         "this variable set, e.g. KREPLAY_TIMING_EXECUTION=0; repeatable")
    ap.add_argument("--set", default=None, metavar="NAME",
                    help="measure Nsight Compute's set NAME (e.g. full) instead of the headline groups: "
                         "kreplay --set NAME against ncu --set NAME, both from this machine's Nsight Compute sections")
    args = ap.parse_args()
    for setting in args.with_env:
        if "=" not in setting or not setting.split("=", 1)[0]:
            ap.error(f"--with-env {setting!r}: give NAME=VALUE, e.g. KREPLAY_TIMING_EXECUTION=0")
    out = os.environ.get("OUT", tempfile.mkdtemp())
    os.makedirs(out, exist_ok=True)
    kreplay = os.path.abspath(args.kreplay)
    work = tempfile.mkdtemp(prefix="kbench")
    exes = build(work)
    # kreplay keeps the GPU's identity between runs (docs/kernel-replay.md): a fresh cache,
    # filled once, as every run after a user's first finds it.
    os.environ["KREPLAY_CACHE_DIR"] = os.path.join(work, "identity-cache")
    check = subprocess.run([kreplay, "avail", "pmc-check"] + [m for g in HEADLINE for m in g],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    results = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "machine": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                         stdout=subprocess.PIPE, text=True).stdout.strip(),
               "headline_check": check.stdout.strip(), "set": args.set,
               "copy_bytes_per_s": device_copy_speed(), "workloads": []}
    # The driver compiles kreplay's flush module once per machine and keeps it in its compute
    # cache (~/.nv/ComputeCache; 3.4-3.7 s on the H200, docs/kernel-replay.md): one kreplay run of
    # the demo first, timed apart, so that the first workload's figures do not carry it.
    demo = os.path.join(os.path.dirname(kreplay), "kreplay-demo")
    if os.path.exists(demo):
        wall, rc, _, _ = timed(kreplay_argv(kreplay, HEADLINE, tempfile.mkdtemp(prefix="kr", dir=work), []) + [demo])
        results["first_run"] = {"argv": "kreplay (headline set) -- kreplay-demo", "wall_s": wall, "rc": rc}
        print(f"first kreplay run (the demo, fills the driver's compute cache): {wall:.2f} s, rc {rc}")
    if args.set:
        # The set's hardware passes on this GPU are in each kreplay run's record
        # (`hardware_passes`, from kreplay's own report); ncu measures the same set.
        print(f"metric set: Nsight Compute's set '{args.set}' for both tools (the headline groups are not used)")
    else:
        print("headline set on this GPU:", check.stdout.strip())
    metrics = ",".join(sorted({m for g in HEADLINE for m in g}))
    for name, argv in workloads(exes):
        if args.only and not any(part in name for part in args.only.split(",")):
            continue
        row = {"workload": name, "runs": {}}
        alone = [timed(argv) for _ in range(2)]
        best = min(alone, key=lambda a: a[0])
        reference = app_output(best[2])
        row["runs"]["alone"] = {"wall_s": best[0], "rc": best[1], "app_s": app_seconds(best[2]),
                                "output_lines": len(reference),
                                "deterministic": app_output(alone[0][2]) == app_output(alone[1][2])}
        configs = [("kreplay, default windows", HEADLINE, [], {}),
                   ("kreplay, default windows, --cache-control none", HEADLINE, ["--cache-control", "none"], {}),
                   ("kreplay, --replay-window 1", HEADLINE, ["--replay-window", "1"], {}),
                   ("kreplay, one-pass set (secondary: nothing replayed)", ONE_PASS, [], {})]
        if args.set:
            configs = [("kreplay, default windows", ("set", args.set), [], {})]
        configs += [(f"kreplay, default windows, {setting}", HEADLINE, [], dict([setting.split("=", 1)]))
                    for setting in args.with_env]
        for label, groups, extra, env in configs:
            if "window 1" in label and any(p in name for p in args.skip_window_1.split(",") if p):
                row["runs"][label] = {"skipped": "thousands of dispatches replayed alone: minutes of device time"}
                continue
            d = tempfile.mkdtemp(prefix="kr", dir=work)
            wall, rc, stdout, stderr = timed(kreplay_argv(kreplay, groups, d, extra) + argv,
                                             env=dict(os.environ, **env) if env else None)
            run = {"wall_s": wall, "rc": rc, "app_s": app_seconds(stdout),
                   "output_same": app_output(stdout) == reference}
            run.update(report_numbers(d, stderr))
            if rc != 0 or not run["output_same"]:
                run["tail"] = (stdout[-600:], stderr[-1500:])
                run["output_diff"] = [l for l in app_output(stdout) if l not in reference][:3]
            row["runs"][label] = run
            print(name, "|", label, "|", {k: v for k, v in run.items() if k != "tail"})
        n = row["runs"]["kreplay, default windows"].get("dispatches") or 0
        launches = min(n, args.ncu_launches) if n else args.ncu_launches
        rep = os.path.join(work, "ncu")
        what = ["--set", args.set] if args.set else ["--metrics", metrics]
        ncu = ["ncu", "--replay-mode", "kernel", "--cache-control", "all", "--clock-control", "none", *what,
               "--launch-count", str(launches), "-f", "-o", rep]
        wall, rc, stdout, stderr = timed(ncu + argv)
        row["runs"]["ncu"] = {"wall_s": wall, "rc": rc, "app_s": app_seconds(stdout), "dispatches": launches,
                              "output_same": app_output(stdout) == reference}
        if rc != 0 or not row["runs"]["ncu"]["output_same"]:
            row["runs"]["ncu"]["tail"] = (stdout[-600:], stderr[-1500:])
            row["runs"]["ncu"]["output_diff"] = [l for l in app_output(stdout) if l not in reference][:3]
        base = row["runs"]["alone"]["wall_s"]
        app_base = row["runs"]["alone"].get("app_s")
        for label, run in row["runs"].items():
            if "wall_s" not in run or label == "alone":
                continue
            profiled = run.get("dispatches") or n
            if profiled:
                run["overhead_ms_per_dispatch"] = (run["wall_s"] - base) / profiled * 1e3
                if run.get("app_s") is not None and app_base is not None:
                    run["app_overhead_ms_per_dispatch"] = (run["app_s"] - app_base) / profiled * 1e3
        row["dispatches"] = n
        results["workloads"].append(row)
        with open(os.path.join(out, "bench.json"), "w") as f:
            json.dump(results, f, indent=1)
    report(results)


def report(results):
    print("\n%-44s %-46s %8s %11s %10s %6s" % ("workload", "run", "wall s", "ms/dispatch", "in-app ms", "output"))
    for row in results["workloads"]:
        for label, run in row["runs"].items():
            if "wall_s" not in run:
                print("%-44s %-46s %s" % (row["workload"][:44], label, run.get("skipped", "-")))
                continue
            cells = ["%.2f" % run[k] if run.get(k) is not None else "-"
                     for k in ("overhead_ms_per_dispatch", "app_overhead_ms_per_dispatch")]
            same = "-" if label == "alone" else ("same" if run.get("output_same") else "DIFF")
            print("%-44s %-46s %8.2f %11s %10s %6s" % (row["workload"][:44], label, run["wall_s"], *cells, same))
        ncu = row["runs"].get("ncu", {})
        for label in [l for l in row["runs"] if l.startswith("kreplay") and "one-pass" not in l]:
            run = row["runs"].get(label, {})
            ratios = []
            for key in ("overhead_ms_per_dispatch", "app_overhead_ms_per_dispatch"):
                k, n = run.get(key), ncu.get(key)
                ratios.append("%.1fx" % (n / k) if k and n and k > 0 else "-")
            print("%-44s %-46s %8s %11s %10s" % ("", "ncu / " + label, "", *ratios))
    if results.get("copy_bytes_per_s"):
        print("device copy speed: %.2f TB/s (read + written)" % (results["copy_bytes_per_s"] / 1e12))


if __name__ == "__main__":
    main()
