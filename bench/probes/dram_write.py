#!/usr/bin/env python3
"""Probe, on the GPU machine from the repository root (issue 19): where the DRAM writes that
kreplay counts on a cuBLAS SGEMM 2048 and Nsight Compute does not come from.

tests/gpu/memory_bound.cu (a streaming copy, an in-place update, the SGEMM; a host sync after
each) under `ncu --cache-control all|none` and under kreplay with `dram__bytes_write.sum` in two
hardware passes (execution 0 and a later one), in variants that each remove one suspect:
  all                      the default (L2 flushed by kernels of the tool's context, events)
  all, host-ordered flush  the flush ordered from the host (no context switch during a kernel)
  all, window 1            every dispatch its own unit (nothing else of the window around it)
  all, windows closed      windows closed at every call (KREPLAY_WINDOW_SPANS=0)
  all, no timing execution the execution without counters after the measured ones left out
  all, no discard          the flush's buffer left in L2 (clean) instead of discarded
  all, tool context        the flush in a context of the tool's own (KREPLAY_FLUSH_IN_APPLICATION=0)
  all, no GPC caches       the fused flush without its constant and instruction-cache part
  all, no grid barrier     the fused flush's last block to finish discards alone, as until
                           2026-12-03 13:00 (no cooperative launch, no block waiting for another).
                           2026-12-03 13:45 UTC (binaries of 353f5a1): with it the in-place
                           update writes 9.7e4-1.1e5 B (ncu: 0), with the grid barrier 0
                           (also with the GPC code run after the sweeps); without the GPC code
                           0 either way
  all, one pass            only the DRAM metric: one hardware pass, nothing restored before it
  all, one pass, no timing the same without the timing execution: nothing snapshotted either
  none                     no flush
  none, host staging       no flush, snapshots staged on the host (does device staging's copy
                           leave dirty lines that pass 0 writes back?)
  none, one pass           only the DRAM metric: nothing replayed, snapshotted or restored
  none, packed, one pass   groups 0 and 2 as one group: execution 0's counters, nothing replayed
  none, two passes, alone  the metric alone in execution 0 and one other pass (packing off)
  none, reenable           every execution on a one-pass configuration of its own (is it the
                           several-pass configuration image, or the snapshots and staging?)
  none, gap (and one pass) the application sleeps 2 ms after every sync (MEMORY_BOUND_GAP_US),
                           beside ncu --cache-control none of the same program: does the time
                           between kernels (ncu serialises and reads counters between them)
                           change the dirty lines the in-place update writes back?
  none, one pass, extra    the application allocates 1400 MiB more and leaves it unused
                           (MEMORY_BOUND_EXTRA_MB), beside ncu on the same program: is it the
                           footprint of a replayed unit's device staging (S0 and F)?
  none, one pass, precopy  the same, and the application copies its buffers into that memory
                           once before its loop (MEMORY_BOUND_PRECOPY), as S0 does
  none, two passes alone, no timing  the replayed unit without its timing execution
  none, unit, one execution  the metric and another group packed into one hardware pass: a
                           window of one execution (ranges for all its kernels in one profiler
                           start, nothing snapshotted), against the one-pass run's profiler start
                           per dispatch; and the same with --replay-window 1
  none, unit, one execution, clean OP  the same unit with the application following every sync
                           by one operation that might write L2's dirty lines back
                           (MEMORY_BOUND_CLEAN=rdma|writevalue|d2h): is there one that leaves
                           the next kernel what ncu's profiler stop and start leave it? And
                           with a 2 ms sleep after every sync (gap): is it the previous
                           kernel's last write-backs, still under way when the next range began?
                           (2026-12-02: rdma and writevalue give ncu's values because kreplay
                           closes its window at those calls, 9 windows of one dispatch, as
                           --replay-window 1 does; d2h and the gap keep the window open and
                           the +5%. The same write enqueued by kreplay itself before each
                           measured launch, its default memory barrier and all, left it too.)
  none, unit, one execution, gapMS  the application sleeps MS ms (10, 30, 100) after every sync:
                           is it the GPU's idle time between kernels (ncu, and a profiler start
                           per dispatch, leave it idle for tens of ms) that lets L2 write dirty
                           lines back before the next kernel?
  none, separator (unit, one execution; one pass)  the application launches an empty kernel
                           right before each kernel (MEMORY_BOUND_SEPARATOR): if a range of one
                           profiler start also counts what happened since the range before it
                           ended (the earlier kernel's last write-backs), the empty kernel's
                           range takes that, and the in-place update's is ncu's
and Nsight Compute with the metric alone (one pass) and with every metric of this probe's four
groups in one call (ncu's own pass layout, its later passes after its own restores: `ncu_groups`;
with `--cache-control none`, `ncu_none_packed` for groups 0 and 2, and `ncu_none_application`
for the four groups in application replay: several passes, each a whole run of the program).
Prints, per kernel, the value in each pass and ncu's.
Usage: python3 bench/probes/dram_write.py [bin dir] [variant,...]   (logs and databases under $OUT)"""
import os
import sqlite3
import subprocess
import sys
import tempfile

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release"
OUT = os.environ.get("OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)
WORK = tempfile.mkdtemp()
APP = os.path.join(WORK, "memory_bound")
subprocess.run(["nvcc", "-O2", "-std=c++17", "-arch=sm_90", "-o", APP, "tests/gpu/memory_bound.cu", "-lcublas", "-lcuda"], check=True)
ARGV = [APP, "3"]
METRIC = "dram__bytes_write.sum"
GROUPS = [["sm__warps_launched.sum", "smsp__inst_executed.sum", "dram__bytes_read.sum"],
          ["smsp__sass_inst_executed_op_shared_ld.sum"],
          ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", METRIC],
          ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", METRIC]]
GAP = {"MEMORY_BOUND_GAP_US": "2000"}
SEPARATOR = {"MEMORY_BOUND_SEPARATOR": "1"}
EXTRA = {"MEMORY_BOUND_EXTRA_MB": "1400"}
PRECOPY = {**EXTRA, "MEMORY_BOUND_PRECOPY": "1"}
ALONE = [[METRIC], ["sm__warps_launched.sum"]]


def short(name):
    return name.split("(")[0].split("<")[0][-24:]


def ncu(control, metrics=(METRIC,), app_env=None, mode="kernel"):
    """[(kernel, bytes or None)] per profiled kernel, in launch order."""
    out = subprocess.run(["ncu", "--replay-mode", mode, f"--cache-control={control}", "--clock-control", "none",
                          "--metrics", ",".join(metrics), "--print-units", "base", "--csv", *ARGV],
                         capture_output=True, text=True, timeout=300, env=dict(os.environ, **(app_env or {})))
    if out.returncode != 0:
        print(f"ncu --cache-control {control} exited {out.returncode}: {out.stderr.strip()[-200:]}")
    rows = []
    for line in out.stdout.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) > 10 and cells[-3] == METRIC:
            try:
                value = float(cells[-1].replace(",", ""))
            except ValueError:  # "n/a"
                value = None
            rows.append((short(cells[4]), value))
    return rows


def kreplay(tag, extra_args=(), env_extra=None, groups=GROUPS):
    d = os.path.join(OUT, tag)
    argv = [os.path.join(BIN, "kreplay")]
    for g in groups:
        argv += ["--pmc", *g]
    argv += ["--replay-mode", "kernel", "--kernel-replay-beta-enabled", "-d", d, "-o", "out", *extra_args, "--", *ARGV]
    env = dict(os.environ, **(env_extra or {}))
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    with open(os.path.join(OUT, f"{tag}.log"), "w") as f:
        f.write(p.stdout + p.stderr)
    db = os.path.join(d, "out_results.db")
    if p.returncode != 0 or not os.path.exists(db):
        return None, p.stderr.strip()[-200:]
    con = sqlite3.connect(db)
    rows = con.execute("SELECT dispatch_id, replay_pass, kernel_name, value FROM counters_collection "
                       "WHERE counter_name = ? ORDER BY dispatch_id, replay_pass", (METRIC,)).fetchall()
    # Bytes snapshotted are recorded on a unit's first member: they show where units begin.
    snapshotted = dict(con.execute("SELECT dispatch_id, bytes_snapshotted FROM kreplay_replay_cost").fetchall())
    per = {}
    for d_id, p_, name, value in rows:
        per.setdefault(d_id, (short(name), {}, snapshotted.get(d_id)))[1][p_] = value
    return [per[k] for k in sorted(per)], p.stderr.strip().splitlines()[-1][:160] if p.stderr.strip() else ""


def main():
    reference = {}
    variants = [
        ("all", [], None, GROUPS),
        ("all_host_ordered", [], {"KREPLAY_HOST_ORDERED_FLUSH": "1"}, GROUPS),
        ("all_window_1", ["--replay-window", "1"], None, GROUPS),
        ("all_windows_closed", [], {"KREPLAY_WINDOW_SPANS": "0"}, GROUPS),
        ("all_no_timing", [], {"KREPLAY_TIMING_EXECUTION": "0"}, GROUPS),
        ("all_no_discard", [], {"KREPLAY_FLUSH_DISCARD": "0"}, GROUPS),
        ("all_tool_context", [], {"KREPLAY_FLUSH_IN_APPLICATION": "0"}, GROUPS),
        ("all_no_gpc_caches", [], {"KREPLAY_FLUSH_GPC_CACHES": "0"}, GROUPS),
        ("all_no_grid_barrier", [], {"KREPLAY_FLUSH_GRID_BARRIER": "0"}, GROUPS),
        ("all_one_pass", [], None, [[METRIC]]),
        ("all_one_pass_no_timing", [], {"KREPLAY_TIMING_EXECUTION": "0"}, [[METRIC]]),
        ("none", ["--cache-control", "none"], None, GROUPS),
        ("none_host_staging", ["--cache-control", "none"], {"KREPLAY_HOST_STAGING": "1"}, GROUPS),
        ("none_one_pass", ["--cache-control", "none"], None, [[METRIC]]),
        ("none_packed_one_pass", ["--cache-control", "none"], None, [GROUPS[0] + GROUPS[2]]),
        ("none_two_passes_alone", ["--cache-control", "none"], {"KREPLAY_PACK_GROUPS": "0"}, ALONE),
        ("none_two_passes_alone_no_timing", ["--cache-control", "none"],
         {"KREPLAY_PACK_GROUPS": "0", "KREPLAY_TIMING_EXECUTION": "0"}, ALONE),
        ("none_unit_one_execution", ["--cache-control", "none"], None, ALONE),
        ("none_unit_one_execution_window_1", ["--cache-control", "none", "--replay-window", "1"], None, ALONE),
        *[(f"none_unit_one_execution_clean_{op}", ["--cache-control", "none"], {"MEMORY_BOUND_CLEAN": op}, ALONE)
          for op in ("rdma", "writevalue", "d2h")],
        ("none_unit_one_execution_gap", ["--cache-control", "none"], GAP, ALONE),
        *[(f"none_unit_one_execution_gap{ms}", ["--cache-control", "none"], {"MEMORY_BOUND_GAP_US": str(ms * 1000)}, ALONE)
          for ms in (10, 30, 100)],
        ("none_one_pass_extra", ["--cache-control", "none"], EXTRA, [[METRIC]]),
        ("none_one_pass_precopy", ["--cache-control", "none"], PRECOPY, [[METRIC]]),
        ("none_reenable", ["--cache-control", "none"], {"KREPLAY_RANGE_PROFILER_SEQUENCE": "reenable"}, GROUPS),
        ("none_gap", ["--cache-control", "none"], GAP, GROUPS),
        ("none_separator", ["--cache-control", "none"], SEPARATOR, GROUPS),
        ("none_unit_one_execution_separator", ["--cache-control", "none"], SEPARATOR, ALONE),
        ("none_one_pass_separator", ["--cache-control", "none"], SEPARATOR, [[METRIC]]),
        ("none_one_pass_gap", ["--cache-control", "none"], GAP, [[METRIC]]),
    ]
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    if only and "ncu_groups" in only:
        every = [m for g in GROUPS for m in g if m != METRIC] + [METRIC]
        print("== ncu_groups: ncu --cache-control all with the four groups' metrics")
        for i, (name, value) in enumerate(ncu("all", every)):
            print(f"   {i:2d} {name:24s} ncu {num(value)}")
    if only and "ncu_none_application" in only:
        every = [m for g in GROUPS for m in g if m != METRIC] + [METRIC]
        print("== ncu_none_application: ncu --replay-mode application --cache-control none, the four groups' "
              "metrics (every pass a run of the whole program: nothing saved or restored)")
        for i, (name, value) in enumerate(ncu("none", every, mode="application")):
            print(f"   {i:2d} {name:24s} ncu {num(value)}")
    if only and "ncu_none_packed" in only:
        packed = [m for m in GROUPS[0] + GROUPS[2] if m != METRIC] + [METRIC]
        print("== ncu_none_packed: ncu --cache-control none with the metrics of groups 0 and 2")
        for i, (name, value) in enumerate(ncu("none", packed)):
            print(f"   {i:2d} {name:24s} ncu {num(value)}")
    for tag, args, env, groups in variants:
        if only and tag not in only:
            continue
        rows, last = kreplay(tag, args, env, groups)
        control = "none" if tag.startswith("none") else "all"
        # ncu runs the program with the same variables of the program's own (MEMORY_BOUND_*).
        app_env = {k: v for k, v in (env or {}).items() if k.startswith("MEMORY_BOUND_")}
        key = (control, tuple(sorted(app_env.items())))
        if key not in reference:
            reference[key] = ncu(control, app_env=app_env)
        ref = reference[key]
        print(f"== {tag}: {last}")
        if rows is None:
            continue
        for i, (name, passes, staged) in enumerate(rows):
            ncu_name, r = ref[i] if i < len(ref) else ("-", None)
            vals = " ".join(f"p{p}={num(v)}" for p, v in sorted(passes.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)))
            print(f"   {i:2d} {name:24s} {vals}   ncu {ncu_name} {num(r)}   snapshotted {staged}")


def num(value):
    return "-" if value is None else f"{value:.3e}"


main()
