"""Section `markers`: --marker-trace and --kernel-rename on a PyTorch training loop marked with
NVTX (tests/gpu/torch_nvtx.py), through the real CLI: the NVTX injection reaches CUPTI, the
ranges land in rocpd's regions and samples and in marker_api_trace.csv, every dispatch carries
its step's range stack, the losses equal a run without kreplay. Then scoped collection: an NVTX
include filter profiles exactly the dispatches of one range, and --selected-regions exactly those
between torch.cuda.profiler.start() and stop() (cudaProfilerStart/Stop, i.e. cuProfilerStart/Stop)."""
import csv
import json
import os
import re
import sys

from harness import GROUPS, KREPLAY, WORK, counters, query, row, run


def replayed(tag, name, app_args=(), options=(), formats=("rocpd", "csv")):
    """tests/gpu/torch_nvtx.py under --marker-trace with 2 groups in kernel replay, its files
    `name`_* in WORK/`tag`: (rc, stdout, stderr, database, folder)."""
    out_dir = os.path.join(WORK, tag)
    argv = [KREPLAY, *sum((["--pmc", *g] for g in GROUPS[:2]), []), "--replay-mode", "kernel",
            "--kernel-replay-beta-enabled", "--marker-trace", *options, "-d", out_dir, "-o", name,
            "-f", *formats, "--", sys.executable, "tests/gpu/torch_nvtx.py", *app_args]
    rc, out, err, _, _ = run(argv, None, tag=tag, timeout=580)
    return rc, out, err, os.path.join(out_dir, f"{name}_results.db"), out_dir


def marker_checks():
    script = [sys.executable, "tests/gpu/torch_nvtx.py"]
    _, alone, _, _, _ = run(script, None, tag="nvtx_plain", timeout=300)
    rc, out, err, db, out_dir = replayed("nvtx", "m")
    losses = re.findall(r"loss (\S+)", out)
    reference = re.findall(r"loss (\S+)", alone)
    row("NVTX-marked training loop under --marker-trace, 2 groups", "losses equal the run alone",
        f"rc {rc}; {losses} vs {reference}", rc == 0 and losses and losses == reference)
    regions = query(db, "SELECT json_extract(extdata, '$.message'), name FROM regions")
    messages = sorted({m for m, _ in regions})
    marks = query(db, "SELECT json_extract(extdata, '$.message') FROM samples")
    row("NVTX ranges in rocpd's regions", "loop (start/end), step 0-2, forward, backward ×3; mark 'loop done'",
        f"{len(regions)} regions {messages}; marks {marks}; {err[-200:]!r}",
        len(regions) == 1 + 3 * 3 and {"loop", "step 0", "step 2", "forward", "backward"} <= set(messages)
        and marks == [("loop done",)])
    stacks = query(db, "SELECT json_extract(extdata, '$.ranges') FROM rocpd_kernel_dispatch ORDER BY dispatch_id")
    inside = [json.loads(s) for (s,) in stacks if s]
    row("every dispatch of the loop carries its range stack", "['step N', 'forward'|'backward']",
        f"{len(inside)} of {len(stacks)} dispatches in a range, e.g. {inside[:2]}",
        len(stacks) > 0 and all(s[0].startswith("step ") and len(s) == 2 for s in inside) and len(inside) >= len(stacks) // 2)
    path = os.path.join(out_dir, "m_marker_api_trace.csv")
    rows = list(csv.DictReader(open(path))) if os.path.exists(path) else []
    row("marker_api_trace.csv", "rocprofv3's columns, a row per range and mark",
        f"{len(rows)} rows, columns {list(rows[0]) if rows else None}",
        len(rows) == len(regions) + len(marks) and rows and list(rows[0]) == [
            "Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"])
    renamed_dir = os.path.join(WORK, "markers_renamed")
    rc, _, _, _, _ = run([KREPLAY, "--kernel-trace", "--kernel-rename", "-d", renamed_dir, "-o", "r", "-f", "csv",
                          "--", *script], None, tag="nvtx_rename", timeout=300)
    names = set()
    trace = os.path.join(renamed_dir, "r_kernel_trace.csv")
    if os.path.exists(trace):
        names = {r["Kernel_Name"] for r in csv.DictReader(open(trace))}
    row("--kernel-rename", "dispatches named forward/backward", f"rc {rc}; names {sorted(names)[:6]}",
        rc == 0 and {"forward", "backward"} <= names)
    scoped_checks(reference, [json.loads(s) if s else [] for (s,) in stacks])
    emit_nvtx_check(reference)


def emit_nvtx_check(reference):
    """The loop under torch.autograd.profiler.emit_nvtx() with a range per layer: every dispatch
    of a layer's forward has that layer in its range stack and an operator range ("aten::...")
    innermost, and its counter values in both groups."""
    rc, out, err, db, _ = replayed("nvtx_emit", "e", ["--emit-nvtx"])
    losses = re.findall(r"loss (\S+)", out)
    stacks = {d: json.loads(s) if s else [] for d, s in query(
        db, "SELECT dispatch_id, json_extract(extdata, '$.ranges') FROM rocpd_kernel_dispatch")}
    in_layer = {d: s for d, s in stacks.items() if any(r.startswith("layer ") for r in s)}
    values = {}
    for (d, _), e in counters(db).items():
        values.setdefault(d, {}).update(e["values"])
    wanted = {m for g in GROUPS[:2] for m in g}
    labelled = [d for d, s in in_layer.items() if s[-1].startswith("aten::") and wanted <= set(values.get(d, {}))]
    layers = sorted({r for s in in_layer.values() for r in s if r.startswith("layer ")})
    row("emit_nvtx() training loop, a range per layer, 2 groups in kernel replay",
        "losses equal; every layer dispatch labelled (layer and aten:: op ranges) with both groups' counters",
        f"rc {rc}; {len(labelled)} of {len(in_layer)} layer dispatches labelled, layers {layers}, "
        f"e.g. {next(iter(in_layer.values()), None)}; {err[-200:]!r}",
        rc == 0 and losses == reference and len(in_layer) > 0 and len(labelled) == len(in_layer)
        and {"layer 0", "layer 2"} <= set(layers))


def scoped_checks(reference, all_stacks):
    """The dispatches profiled under a filter (those with counter records, each with its range
    stack under --marker-trace) against the unfiltered run's stacks `all_stacks`."""
    def profiled(options, app_args, tag):
        rc, out, err, db, _ = replayed(tag, "s", app_args, options, formats=("rocpd",))
        rows = query(db, "SELECT json_extract(extdata, '$.ranges') FROM rocpd_kernel_dispatch")
        return rc, re.findall(r"loss (\S+)", out), [json.loads(s) if s else [] for (s,) in rows], err

    wanted = [s for s in all_stacks if s == ["step 1", "forward"]]
    rc, losses, stacks, err = profiled(["--nvtx-include", "step 1/forward"], [], "nvtx_include")
    row("--nvtx-include 'step 1/forward'", f"exactly the {len(wanted)} dispatches of step 1's forward; losses equal",
        f"rc {rc}; {len(stacks)} profiled, stacks {sorted({tuple(s) for s in stacks})}; {err[-200:]!r}",
        rc == 0 and losses == reference and len(wanted) > 0 and sorted(stacks) == sorted(wanted))
    # Launched between start() and stop(): from the first dispatch in step 1's range to the last,
    # in launch order; backward's kernels among them come from PyTorch's autograd thread, whose
    # NVTX stack is its own (empty).
    inside_step1 = [i for i, s in enumerate(all_stacks) if s[:1] == ["step 1"]]
    step1 = all_stacks[inside_step1[0]:inside_step1[-1] + 1] if inside_step1 else []
    rc, losses, stacks, err = profiled(["--selected-regions"], ["--profile-step", "1"], "selected_regions")
    row("--selected-regions around step 1 (torch.cuda.profiler.start/stop)",
        f"exactly the {len(step1)} dispatches launched in step 1 ({len(inside_step1)} in its range, the rest"
        " the autograd thread's); losses equal",
        f"rc {rc}; {len(stacks)} profiled, stacks {sorted({tuple(s) for s in stacks})}; {err[-200:]!r}",
        rc == 0 and losses == reference and len(step1) > 0 and sorted(stacks) == sorted(step1))
