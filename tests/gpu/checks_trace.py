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
