"""Section `trace`: the Perfetto trace (-f pftrace) of the CG solver, read back with Perfetto's own
Python package."""
import json
import os
import shutil
import subprocess
import sys

from harness import HEADLINE, KREPLAY, OUT, SOLVER, WORK, query, row, run


def trace_check():
    """-f pftrace of a real program: the CG solver (cuBLAS, scalars read back every iteration)
    under kernel replay with the headline groups, read back with Perfetto's own Python bindings of
    its trace schema (crates/cli/tests/pftrace_read.py; the perfetto and protobuf packages from
    $KREPLAY_PYTHONPATH or .deps/py, carried to the GPU machine): one slice per pass of every
    dispatch, no field the schema does not know, replay-pass tracks. The file is kept in $OUT."""
    out_dir = os.path.join(WORK, "trace")
    argv = [KREPLAY, *sum((["--pmc", *g] for g in HEADLINE), []), "--replay-mode", "kernel",
            "--kernel-replay-beta-enabled", "-d", out_dir, "-o", "cg", "-f", "pftrace", "rocpd", "--", SOLVER, "30"]
    rc, out, err, _, wall = run(argv, None, tag="trace")
    path = os.path.join(out_dir, "cg_results.pftrace")
    db = os.path.join(out_dir, "cg_results.db")
    records = query(db, "SELECT COUNT(*) FROM kreplay_pass_counters GROUP BY dispatch_id, replay_pass")
    code_objects_row(db, rc)
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
