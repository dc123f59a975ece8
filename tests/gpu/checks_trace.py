"""Section `trace`: the Perfetto trace (-f pftrace) of the CG solver, read back with Perfetto's own
Python package, and its database as rocprofv3's tools read it (the views, pmc_info, the kernels
against --stats and the JSON); and --kernel-trace alone, whose launches are timed without waiting
for them, against Nsight Compute's kernels and durations."""
import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys

from harness import HEADLINE, KREPLAY, OUT, SOLVER, WORK, app_lines, ncu_program, query, row, run


def trace_check():
    """-f pftrace of a real program: the CG solver (cuBLAS, scalars read back every iteration)
    under kernel replay with the headline groups, read back with Perfetto's own Python bindings of
    its trace schema (crates/cli/tests/pftrace_read.py; the perfetto and protobuf packages from
    $KREPLAY_PYTHONPATH or .deps/py, carried to the GPU machine): one slice per pass of every
    dispatch, no field the schema does not know, replay-pass tracks. The file is kept in $OUT."""
    out_dir = os.path.join(WORK, "trace")
    argv = [KREPLAY, *sum((["--pmc", *g] for g in HEADLINE), []), "--replay-mode", "kernel",
            "--kernel-replay-beta-enabled", "--stats", "-d", out_dir, "-o", "cg", "-f", "pftrace", "rocpd", "csv", "json",
            "--", SOLVER, "30"]
    rc, out, err, _, wall = run(argv, None, tag="trace")
    path = os.path.join(out_dir, "cg_results.pftrace")
    db = os.path.join(out_dir, "cg_results.db")
    records = query(db, "SELECT COUNT(*) FROM kreplay_pass_counters GROUP BY dispatch_id, replay_pass")
    code_objects_row(db, rc)
    database_rows(db, out_dir, rc)
    py = os.environ.get("KREPLAY_PYTHONPATH", os.path.abspath(".deps/py"))
    p = subprocess.run([sys.executable, "crates/cli/tests/pftrace_read.py", path], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=py)) if os.path.exists(path) else None
    summary = json.loads(p.stdout) if p and p.returncode == 0 else None
    if os.path.exists(path):
        shutil.copy(path, os.path.join(OUT, "cg_results.pftrace"))
    if summary is None:
        why = (p.stderr if p else "no file")[-200:]
        if p and "No module named" in p.stderr:
            why = f"Perfetto's Python package is not in {py}: carry .deps/py (.ci/run fills it) or set KREPLAY_PYTHONPATH; {why}"
        row("pftrace of the CG solver", "parses with Perfetto's schema", f"rc {rc}; {why!r}", False)
        return
    slices = summary["slices"]
    tracks = sorted({t["name"] for t in summary["tracks"].values()})
    names = sorted({s["name"] for s in slices})
    row("pftrace of the CG solver, 4 groups in 3 hardware passes",
        "parses with Perfetto's schema, 0 unknown fields, one slice per dispatch pass, replay-pass tracks",
        f"rc {rc}; {len(slices)} slices vs {len(records)} dispatch passes; {summary['unknown_fields']} unknown; "
        f"tracks {tracks}; {len(names)} kernels, e.g. {names[:2]}; {os.path.getsize(path)} bytes",
        rc == 0 and summary["unknown_fields"] == 0 and len(slices) == len(records) > 0
        and any("replay pass" in t for t in tracks) and summary["unclosed"] == 0 and summary["unmatched_ends"] == 0)
    counter_tracks = sorted(t["name"] for t in summary["counter_tracks"].values())
    metrics = sorted({m for g in HEADLINE for m in g})
    row("pftrace of the CG solver: kernel_dispatch slices, a counter track per counter",
        f"every slice in category kernel_dispatch; {len(metrics)} tracks 'Agent [0] PMC <counter>' with values",
        f"{sum(s['categories'] == ['kernel_dispatch'] for s in slices)} of {len(slices)} slices; "
        f"{len(counter_tracks)} counter tracks, {len(summary['counters'])} values",
        len(slices) > 0 and all(s["categories"] == ["kernel_dispatch"] for s in slices)
        and counter_tracks == sorted(f"Agent [0] PMC {m}" for m in metrics) and len(summary["counters"]) > 0)


# rocpd's views that rocprofv3's tools open (rocpd's data_views.sql, summary_views.sql).
VIEWS = ["code_objects", "kernel_symbols", "processes", "threads", "regions", "region_args", "samples",
         "sample_regions", "regions_and_samples", "kernels", "pmc_info", "pmc_events", "events_args",
         "stream_args", "memory_copies", "memory_allocations", "scratch_memory", "counters_collection",
         "pc_sampling", "top_kernels", "busy", "top"]


def database_rows(db, out_dir, rc):
    """The CG solver's database as rocprofv3's tools read it: every view opens, pmc_info has a row
    per counter, the kernels view (a row per dispatch) gives --stats' calls and durations per
    kernel, and the JSON a counter record per dispatch pass."""
    broken = []
    for view in VIEWS:
        try:
            con = sqlite3.connect(db)
            con.execute(f"SELECT * FROM {view} LIMIT 1").fetchall()
            con.close()
        except sqlite3.Error as e:
            broken.append(f"{view}: {e}")
    metrics = {m for g in HEADLINE for m in g}
    pmc = {name for (name,) in query(db, "SELECT name FROM pmc_info")}
    ours = {n: (c, d) for n, c, d in query(db, "SELECT name, COUNT(*), SUM(duration) FROM kernels GROUP BY name")}
    path = os.path.join(out_dir, "cg_kernel_stats.csv")
    stats = ({r["Name"]: (int(r["Calls"]), int(r["TotalDurationNs"])) for r in csv.DictReader(open(path))}
             if os.path.exists(path) else {})
    passes = query(db, "SELECT COUNT(*) FROM (SELECT 1 FROM kreplay_pass_counters GROUP BY dispatch_id, replay_pass)")
    json_path = os.path.join(out_dir, "cg_results.json")
    records = (len(json.load(open(json_path))["rocprofiler-sdk-tool"][0]["callback_records"]["counter_collection"])
               if os.path.exists(json_path) else None)
    row("database of the CG solver as rocprofv3's tools read it",
        f"{len(VIEWS)} views open; pmc_info a row per counter ({len(metrics)}); kernels == --stats per kernel; "
        "a JSON counter record per dispatch pass",
        f"rc {rc}; broken views {broken[:3]}; pmc_info {len(pmc)} rows, missing {sorted(metrics - pmc)}; "
        f"{len(ours)} kernels, differing from --stats {[n for n in ours if ours[n] != stats.get(n)][:2]}; "
        f"JSON {records} counter records, {passes[0][0] if passes else '?'} dispatch passes",
        rc == 0 and not broken and metrics <= pmc and len(pmc) == len(metrics) and ours and ours == stats
        and passes and records == passes[0][0])


def code_objects_row(db, rc):
    """The CG solver's code objects as rocpd's `code_objects` view reads them: one per module CUPTI
    reported loaded (the solver's own, cuBLAS's), from memory (`memory://pid#offset=...&size=...`),
    and every kernel symbol's `code_object_id` naming one of them."""
    objects = query(db, "SELECT uri, storage_type_str, code_object_size, memory_size FROM code_objects")
    symbols = query(db, "SELECT COUNT(*), COALESCE(SUM(code_object_id = 0), 0) FROM kernel_symbols")
    dangling = query(db, "SELECT COUNT(*) FROM rocpd_info_kernel_symbol K WHERE NOT EXISTS "
                         "(SELECT 1 FROM rocpd_info_code_object C WHERE C.id = K.code_object_id AND C.guid = K.guid)")
    count, unlinked = symbols[0] if symbols else (0, 0)
    row("code objects of the CG solver (its module, cuBLAS's)",
        "one per module load, from memory; every kernel symbol names one",
        f"rc {rc}; {len(objects)} code objects, e.g. {objects[:1]}; {count} kernel symbols, {unlinked} with "
        f"code_object_id 0, {dangling[0][0] if dangling else '?'} naming no row",
        rc == 0 and len(objects) > 0 and count > 0 and unlinked == 0 and dangling == [(0,)]
        and all(o[0].startswith("memory://") and o[1] == "MEMORY" and o[2] == 88 and o[3] > 0 for o in objects))


def untimed_trace_check():
    """--kernel-trace alone on the CG solver: no counters, so each kernel is timed by CUPTI's record
    of its execution, read after it completed, never waited for on the application's thread. The
    solver prints what it prints alone; every kernel Nsight Compute profiles has a row, in launch
    order and with its name; each row's duration is the kernel's: within 25 % + 2 us of Nsight
    Compute's gpu__time_duration of it, and by the median over the kernels within 2 us; rows of one
    stream do not overlap."""
    out_dir = os.path.join(WORK, "ktrace")
    argv = [SOLVER, "30"]
    rc, out, err, _, _ = run([KREPLAY, "--kernel-trace", "-d", out_dir, "-o", "kt", "-f", "rocpd", "--", *argv],
                             None, tag="ktrace")
    _, alone, _, _, _ = run(argv, None, tag="ktrace_alone")
    ncu = ncu_program(argv, metrics=("gpu__time_duration.sum",), cache_control="none")
    db = os.path.join(out_dir, "kt_results.db")
    rows = query(db, 'SELECT dispatch_id, name, stream_id, "start", "end" FROM kernels ORDER BY dispatch_id')
    ours = [r[4] - r[3] for r in rows]
    theirs = [v.get("gpu__time_duration.sum") for v in ncu]
    paired = list(zip(ours, theirs))
    far = [(a, b) for a, b in paired if b is None or a <= 0 or abs(a - b) > 0.25 * b + 2000]
    differences = sorted(abs(a - b) for a, b in paired if b is not None)
    median = differences[len(differences) // 2] if differences else None
    overlaps = sum(1 for x, y in zip(rows, rows[1:]) if x[2] == y[2] and y[3] < x[4])
    row("--kernel-trace alone on the CG solver (launches not waited for)",
        "output as alone; a row per kernel ncu profiles, in order; each lasts as its kernel "
        "(ncu gpu__time_duration within 25 % + 2 us, median within 2 us); no overlap on a stream",
        f"rc {rc}; output same {app_lines(out) == app_lines(alone)}; {len(rows)} rows vs {len(ncu)} ncu kernels; "
        f"{len(far)} far from ncu, e.g. {far[:2]}; median difference {median} ns, e.g. {paired[:2]}; "
        f"{overlaps} overlaps; ids {[r[0] for r in rows[:3]]}...",
        rc == 0 and app_lines(out) == app_lines(alone) and len(rows) == len(ncu) > 0 and not far
        and median is not None and median <= 2000 and overlaps == 0
        and [r[0] for r in rows] == list(range(1, len(rows) + 1)))


def reset_trace_check():
    """--kernel-trace alone across a device reset (tests/gpu/reset_trace.cu): 200 kernels launched,
    the primary context destroyed while they may still run, 200 more in a new context. Every
    kernel keeps its row with a positive duration, in launch order, nothing said lost."""
    program = os.path.join(WORK, "reset_trace")
    out_dir = os.path.join(WORK, "ktrace_reset")
    rc, out, err, _, _ = run([KREPLAY, "--kernel-trace", "-d", out_dir, "-o", "kr", "-f", "rocpd", "--", program],
                             None, tag="ktrace_reset")
    db = os.path.join(out_dir, "kr_results.db")
    rows = query(db, 'SELECT dispatch_id, "end" - "start" FROM kernels ORDER BY dispatch_id') if os.path.exists(db) else []
    bad = [r for r in rows if r[1] is None or r[1] <= 0]
    lost = "could not be read" in err or "no record" in err
    row("--kernel-trace alone across cudaDeviceReset (200 kernels, reset, 200 more)",
        "program PASS; 400 rows in launch order, each with a positive duration; none said lost",
        f"rc {rc}; {'PASS' if 'reset_trace PASS' in out else out[-120:]!r}; {len(rows)} rows, "
        f"{len(bad)} without a duration, e.g. {bad[:2]}; lost said {lost}; {err[-160:]!r}",
        rc == 0 and "reset_trace PASS" in out and len(rows) == 400 and not bad and not lost
        and [r[0] for r in rows] == list(range(1, 401)))
