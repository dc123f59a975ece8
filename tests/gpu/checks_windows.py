"""Section `windows`: replay windows (--replay-window), K consecutive dispatches sharing each
group's counter configuration, against per-dispatch replay and Nsight Compute."""
import json
import os
import re
import sys

from harness import (CHECKS, DEMO, FIXED_COST_NS, GROUPS, SPLIT, counters, later_group_check, ncu_reference,
                     passes_per_dispatch, query, result_line, row, run)


def references():
    """What the core section measures and this one compares with, measured here when the core
    section does not run: Nsight Compute's warp and instruction counts of `inplace`, and
    PyTorch's losses alone."""
    ncu_list = ncu_reference()
    out0 = run([sys.executable, "tests/gpu/torch_train.py"], None, tag="torch_plain", timeout=300)[1]
    return ncu_list, re.findall(r"loss (\S+)", out0)


def window_checks(ncu_list, torch_loss):
    """Replay windows (--replay-window): K consecutive dispatches share each group's counter
    configuration; results and counters must be those of per-dispatch replay (and `ncu_list`,
    `torch_loss`: references())."""
    # KREPLAY_GPU_WINDOW=8 runs the same checks with windows of 8 (e.g. the streams check's
    # 8 dispatches then fill one window exactly); `auto` as the CLI's --replay-window auto.
    size = os.environ.get("KREPLAY_GPU_WINDOW", "64")
    window = "auto" if size == "auto" else {"count": int(size)}
    rc, out, err, db, wall = run([DEMO], GROUPS, tag="wdemo5", replay_window=window)
    passes = passes_per_dispatch(db)
    full = [c for _, c, _ in passes if c == 5]
    row("window: demo 5 groups", "exit 0, verified, 6 dispatches x 5 passes",
        f"exit {rc}, {'verified' if 'PASSED' in out else 'NOT verified'}, {len(passes)} dispatches, {len(full)} with 5 passes; {err.strip()[-120:]!r}",
        rc == 0 and "PASSED" in out and len(full) == 6 and len(passes) == 6)
    for mode in ("inplace", "streams", "launch_ex", "footprint"):
        # inplace: groups packed into one hardware pass; the others: SPLIT, two hardware passes.
        groups = GROUPS if mode == "inplace" else SPLIT
        rc, out, err, db, wall = run([CHECKS, mode], groups, tag=f"w{mode}5", replay_window=window)
        status, details = result_line(out, mode)
        passes = passes_per_dispatch(db)
        replayed = sum(1 for _, c, _ in passes if c == 5)
        ok = rc == 0 and status == "PASS" and len(passes) > 0 and replayed == len(passes)
        extra = ""
        if mode == "inplace":
            good, detail, table = later_group_check(db)
            per = {}
            for (d, p), e in sorted(table.items()):
                for k in ("sm__warps_launched.sum", "smsp__inst_executed.sum"):
                    if k in e["values"]:
                        per.setdefault(d, {}).setdefault(k, e["values"][k])
            lst = [per[d] for d in sorted(per)]
            same = bool(ncu_list) and len(lst) == len(ncu_list) and all(
                abs(a.get(m, -1) - b.get(m, -2)) < 0.5 for a, b in zip(lst, ncu_list) for m in a)
            costs = query(db, f"SELECT {FIXED_COST_NS}, pass_ns FROM kreplay_replay_cost")
            total_ms = sum(c[0] + sum(json.loads(c[1])) for c in costs) / 1e6
            extra = f"; counters plausible={good}, == ncu {same}; {total_ms:.0f} ms for {len(costs)} dispatches"
            ok = ok and good and same
        row(f"window: {mode} 5 groups", "one-execution results, every dispatch 5 passes" + (", counters == ncu" if mode == "inplace" else ""),
            f"{status} {details}; {replayed}/{len(passes)} with 5 passes{extra}; {err.strip()[-100:]!r}", ok)
    # Copies, a memset on another stream, allocations and syncs between the kernels of one
    # thread: with every group in one hardware pass, windows stay open across them; each
    # dispatch's deterministic counters must still be Nsight Compute's, and its others those
    # of windows that close at every call (KREPLAY_WINDOW_SPANS=0), within noise.
    ncu_interleaved = ncu_reference("interleaved")
    runs = {}
    for label, env in (("spanning", {}), ("closing", {"KREPLAY_WINDOW_SPANS": "0"})):
        rc, out, err, db, wall = run([CHECKS, "interleaved"], GROUPS, tag=f"winterleaved_{label}",
                                     env_extra=env, replay_window=window)
        status, details = result_line(out, "interleaved")
        passes = passes_per_dispatch(db)
        replayed = sum(1 for _, c, _ in passes if c == 5)
        table = counters(db)
        per = {}
        for (d, p), e in sorted(table.items()):
            for k, v in e["values"].items():
                per.setdefault(d, {}).setdefault(k, v)
        lst = [per[d] for d in sorted(per)]
        same = bool(ncu_interleaved) and len(lst) == len(ncu_interleaved) and all(
            abs(a.get(m, -1) - b.get(m, -2)) < 0.5 for a, b in zip(lst, ncu_interleaved) for m in b)
        spans = re.search(r"stayed open across (\d+) other call", err)
        windows = re.search(r"(\d+) dispatches in (\d+) windows", err)
        runs[label] = lst
        ok = rc == 0 and status == "PASS" and len(passes) == 8 and replayed == 8 and same and bool(windows)
        if label == "spanning":
            ok = ok and bool(spans) and int(windows.group(2)) < int(windows.group(1))
        else:
            ok = ok and not spans
        row(f"window: interleaved calls, 5 groups, {label}",
            "memory right, 8 dispatches x 5 passes, warps/inst == ncu" + (", fewer windows than dispatches" if label == "spanning" else ""),
            f"{status} {details}; {replayed}/{len(passes)}; == ncu {same}; {windows.group(0) if windows else 'no window line'}; "
            f"{spans.group(0) if spans else 'no spanning'}", ok)
    # DRAM and L2 traffic of each kernel, spanning vs closing windows (the copies must not leak in).
    # L2 sectors are stable run to run (a 4 MiB memset overlapping a kernel would add a third);
    # DRAM reads depend on what L2 still holds, so they are shown, not judged.
    ratios = {m: [a[m] / b[m] for a, b in zip(runs.get("spanning", []), runs.get("closing", [])) if a.get(m) and b.get(m)]
              for m in ("lts__t_sectors.sum", "dram__bytes_read.sum")}
    lts = ratios["lts__t_sectors.sum"]
    row("window: interleaved calls, L2 sectors spanning vs closing", "8 ratios, each within 0.8-1.25",
        "; ".join(f"{m}: {len(r)} ratios, {min(r, default=0):.3f}-{max(r, default=0):.3f}" for m, r in ratios.items()),
        len(lts) == 8 and all(0.8 <= r <= 1.25 for r in lts))
    # The set-up at context creation and its warm-up switched off: the first dispatch sets the
    # counters up itself, as before them (and a pass asking for more ranges than its object was
    # first configured for starts on a fresh one).
    for label, env in (("no warm-up", {"KREPLAY_WARM_UP": "0"}),
                       ("no early set-up", {"KREPLAY_EARLY_SETUP": "0"})):
        rc, out, err, db, wall = run([CHECKS, "inplace"], GROUPS, tag=f"winplace_{label.replace(' ', '_')}",
                                     env_extra=env, replay_window=window)
        status, details = result_line(out, "inplace")
        passes = passes_per_dispatch(db)
        replayed = sum(1 for _, c, _ in passes if c == 5)
        good, detail, _ = later_group_check(db)
        row(f"window: inplace 5 groups, {label}", "one-execution results, every dispatch 5 passes, counters plausible",
            f"{status} {details}; {replayed}/{len(passes)} with 5 passes; plausible={good}; {err.strip()[-100:]!r}",
            rc == 0 and status == "PASS" and len(passes) > 0 and replayed == len(passes) and good)
    rc2, out2, err2, db2, wall2 = run([sys.executable, "tests/gpu/torch_train.py"], GROUPS[:2], tag="wtorch2", timeout=580, replay_window=window)
    passes = passes_per_dispatch(db2)
    replayed = sum(1 for _, c, _ in passes if c == 2)
    loss2 = re.findall(r"loss (\S+)", out2)
    row("window: PyTorch loss bit-identical (2 groups)", f"{torch_loss}", f"{loss2}; {replayed}/{len(passes)} replayed, {wall2:.0f}s; {err2.strip()[-100:]!r}",
        rc2 == 0 and bool(loss2) and loss2 == torch_loss and replayed > 0)
