"""What every GPU check of tests/gpu/run.py shares: the paths of the binaries and test programs,
the counter groups, running a program under kreplay's injected library (or alone, or under ncu),
reading the per-process databases and the CLI's CSV pages, and the rows of the one table (each
check's row(): check, expected, seen, PASS/FAIL) with the experiment lines printed above it.
Every run's command, status and output goes to $KREPLAY_GPU_OUT/gpu-log.txt."""
import csv
import glob
import hashlib
import json
import math
import os
import re
import sqlite3
import subprocess
import time


ROOT = os.getcwd()
WORK = os.environ["KREPLAY_GPU_WORK"]
OUT = os.environ["KREPLAY_GPU_OUT"]
BIN = os.path.join(ROOT, os.environ.get("KREPLAY_BIN", "target/release"))
INJECT = os.path.join(BIN, "libkreplay_inject.so")
DEMO = os.path.join(BIN, "kreplay-demo")
KREPLAY = os.path.join(BIN, "kreplay")
CHECKS = os.path.join(WORK, "replay_checks")
LOG = open(os.path.join(OUT, "gpu-log.txt"), "w")

GROUPS = [
    ["sm__warps_launched.sum", "smsp__inst_executed.sum"],
    ["sm__warps_launched.sum", "dram__bytes_read.sum"],
    ["sm__warps_launched.sum", "lts__t_sectors.sum"],
    ["smsp__inst_executed.sum", "sm__cycles_elapsed.avg"],
    ["sm__ctas_launched.sum", "gpu__time_duration.sum"],
]
# Five one-pass groups whose union needs two hardware passes on GH100 (reference §10 probe):
# packed, they still need a restore and two executions.
SPLIT = [
    ["sm__warps_launched.sum", "smsp__inst_executed.sum"],
    ["dram__bytes_read.sum", "lts__t_sectors.sum"],
    ["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sm__cycles_active.avg"],
    ["smsp__sass_inst_executed_op_global_ld.sum"],
    ["sm__inst_executed_pipe_fma.sum"],
]
UNPACKED = {"KREPLAY_PACK_GROUPS": "0"}
# The benchmark's headline set: four groups that each fit one pass and together need three
# hardware passes on GH100 (packed [0+2, 1, 3]): SASS instruction counts, shared-memory bank
# conflicts, L1 requests, DRAM and L2 sectors.
HEADLINE = [
    ["sm__warps_launched.sum", "smsp__inst_executed.sum"],
    ["smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"],
    ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "dram__sectors_read.sum", "lts__t_sectors_op_read.sum"],
    ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "lts__t_sectors_op_write.sum"],
]
SYNCLOOP = os.path.join(WORK, "syncloop")
TWO_DEVICES = os.path.join(WORK, "two_devices")
SOLVER = os.path.join(WORK, "solver")
# The table's rows (row()), and the lines printed above it, reported and not judged.
rows = []
experiments = []


def log(text):
    LOG.write(text + "\n")
    LOG.flush()


def row(check, expected, seen, ok):
    rows.append((check, str(expected), str(seen), "PASS" if ok else "FAIL"))
    log(f"ROW {check} | {expected} | {seen} | {'PASS' if ok else 'FAIL'}")


def config(groups, tag, **overrides):
    db = os.path.join(WORK, f"{tag}_%pid%.db")
    return overrides | {
        "groups": [{"counters": [{"requested": m, "metric": m} for m in g]} for g in groups],
        "mode": "kernel_replay" if len(groups) > 1 else "single",
        "filter": {"include_regex": None, "exclude_regex": None, "iteration_range": None},
        "kernel_trace": True,
        "database_path": db,
        "drain_timeout_ms": 60000,
        "log_level": "warning",
    } | overrides


# A replay cost's time besides its passes (Total_Ns of replay_cost.csv is this plus the passes).
FIXED_COST_NS = "drain_ns + snapshot_ns + restore_ns + timing_execution_ns"


def run(cmd, groups=None, tag="plain", timeout=300, env_extra=None, **overrides):
    env = dict(os.environ)
    if groups is not None:
        env["CUDA_INJECTION64_PATH"] = INJECT
        env["KREPLAY_CONFIG"] = json.dumps(config(groups, tag, **overrides))
    env.update(env_extra or {})
    started = time.time()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout"
    wall = time.time() - started
    log(f"=== {tag}: {' '.join(cmd)} (groups={len(groups) if groups else 0}) rc={rc} wall={wall:.1f}s")
    log(out)
    log(err)
    dbs = sorted(glob.glob(os.path.join(WORK, f"{tag}_*.db")))
    return rc, out, err, (dbs[-1] if dbs else None), wall


def query(db, sql, args=()):
    if not db:
        return []
    try:
        con = sqlite3.connect(db)
        result = con.execute(sql, args).fetchall()
        con.close()
        return result
    except sqlite3.Error as e:
        log(f"sqlite error on {db}: {e}")
        return []


def counters(db):
    """{(dispatch_id, replay_pass): {counter: value}}, with the kernel name and grid size."""
    table = {}
    for d, p, name, grid, block, start, end, counter, value in query(
        db,
        "SELECT dispatch_id, replay_pass, kernel_name, grid_size, workgroup_size, start, \"end\", counter_name, value FROM kreplay_pass_counters ORDER BY dispatch_id, replay_pass",
    ):
        # grid_size counts threads, as rocprofv3's does; blocks = grid_size / workgroup_size.
        entry = table.setdefault((d, p), {"kernel": name, "grid": grid // max(1, block), "duration": end - start, "values": {}})
        entry["values"][counter] = value
    return table


def passes_per_dispatch(db):
    return query(db, "SELECT K.dispatch_id, COUNT(*), GROUP_CONCAT(DP.replay_pass) FROM kreplay_dispatch_pass DP JOIN rocpd_kernel_dispatch K ON K.id = DP.dispatch_row GROUP BY K.dispatch_id ORDER BY K.dispatch_id")


def warnings(db):
    return [m for (m,) in query(db, "SELECT message FROM kreplay_warning")]


def result_line(out, mode):
    m = re.search(rf"^RESULT {mode} (PASS|FAIL|VALUES|SKIP) (.*)$", out, re.M)
    return (m.group(1), m.group(2)) if m else ("NONE", out.strip()[-120:])


def ncu_program(argv, metrics=("sm__warps_launched.sum", "smsp__inst_executed.sum"), cache_control="all", options=()):
    """Nsight Compute's values per profiled kernel, in launch order: [{metric: value}]."""
    rc, out, err, _, wall = run(["ncu", "--clock-control", "none", "--cache-control", cache_control, *options,
                                 "--metrics", ",".join(metrics),
                                 "--csv", "--print-units", "base", *argv], None,
                                tag="ncu_" + "_".join([os.path.basename(argv[0])] + argv[1:2] + [cache_control]
                                                      + [hashlib.sha1(",".join([*metrics, *options]).encode()).hexdigest()[:8]]),
                                timeout=300)
    values = {}
    for line in out.splitlines():
        cells = [c.strip('"') for c in re.findall(r'"((?:[^"]|"")*)"', line)]
        if len(cells) > 5 and cells[0].isdigit():
            try:
                values.setdefault(int(cells[0]), {})[cells[-3]] = float(cells[-1].replace(",", ""))
            except ValueError:
                pass
    return [values[k] for k in sorted(values)]


def ncu_reference(mode="inplace"):
    """Nsight Compute's warp and instruction counts of a replay_checks mode."""
    return ncu_program([CHECKS, mode])


def later_group_check(db):
    """Whether a 5-group (GROUPS) run's counters are all finite and plausible, the later groups'
    too: (ok, detail, its counters)."""
    table = counters(db)
    values = [v for e in table.values() for v in e["values"].values()]
    finite = bool(values) and all(v is not None and math.isfinite(v) for v in values)
    later = [e for k, e in table.items() if k[1] == 4]
    ctas_ok = bool(later) and all(e["values"].get("sm__ctas_launched.sum") == e["grid"] for e in later)
    dram = [e["values"].get("dram__bytes_read.sum") for k, e in table.items() if k[1] == 1]
    lts = [e["values"].get("lts__t_sectors.sum") for k, e in table.items() if k[1] == 2]
    # dram__bytes_read.sum may truly be 0 (the 4 MiB buffer stays in the 60 MB L2 after a
    # restore); L2 sectors cannot: each dispatch reads 4 MiB = 131072 sectors of 32 B.
    dram_ok = bool(dram) and all(v is not None and math.isfinite(v) and v >= 0 for v in dram)
    lts_ok = bool(lts) and all(v is not None and math.isfinite(v) and v >= 131072 for v in lts)
    detail = (f"{len(values)} values, finite={finite}, ctas==grid {ctas_ok} "
              f"({[e['values'].get('sm__ctas_launched.sum') for e in later][:2]} vs {[e['grid'] for e in later][:1]}), lts {lts[:2]}, dram {dram[:2]}")
    return finite and ctas_ok and dram_ok and lts_ok, detail, table


def app_lines(text):
    """The application's own output: kreplay's lines and timings left out."""
    return [l for l in text.splitlines() if l.strip() and not l.startswith("kreplay")
            and "dispatch_ms" not in l and "app_s=" not in l]


def cli_csv_values(out_dir, name="sm__warps_launched.sum"):
    """Counter_Value of `name` in every counter_collection.csv under out_dir."""
    values = []
    for path in sorted(glob.glob(os.path.join(out_dir, "**", "*counter_collection.csv"), recursive=True)):
        with open(path) as f:
            values += [float(r["Counter_Value"]) for r in csv.DictReader(f) if r["Counter_Name"] == name]
    return values
