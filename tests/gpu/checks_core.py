"""Section `core`: the per-dispatch checks no other section holds. The demo and the CLI, results
of every replay_checks mode with 1, 2 and 5 groups, groups packed into shared hardware passes,
streams under stress, a reloaded module, managed and pool memory, a refused launch, a stuck
stream, nothing measured, counters against Nsight Compute's and across passes, timestamps,
PyTorch's loss, and (reported, not judged) the overhead and other range-profiler sequences."""
import glob
import json
import math
import os
import re
import shutil
import sys

from harness import (CHECKS, DEMO, FIXED_COST_NS, GROUPS, KREPLAY, OUT, SPLIT, UNPACKED, WORK, counters, experiments,
                     later_group_check, log, ncu_reference, passes_per_dispatch, query, result_line, row, run, warnings)


def deterministic(db, names=("sm__warps_launched.sum", "smsp__inst_executed.sum")):
    """{(dispatch, pass, counter): value} of deterministic counters."""
    return {(d, p, k): v for (d, p), e in counters(db).items() for k, v in e["values"].items() if k in names}


def mean_overhead_ms(db):
    costs = query(db, f"SELECT {FIXED_COST_NS}, pass_ns FROM kreplay_replay_cost WHERE outcome='replayed'")
    totals = [(c[0] + sum(json.loads(c[1]))) / 1e6 for c in costs]
    return sum(totals) / len(totals) if totals else float("nan")


def packing_checks(unpacked5):
    """Groups packed into shared hardware passes: the same values as one pass per group, from
    fewer executions."""
    rc, out, err, db, wall = run([CHECKS, "inplace"], GROUPS, tag="pack5")
    status, details = result_line(out, "inplace")
    executions = sorted({c for (c,) in query(db, "SELECT passes FROM kreplay_replay_cost WHERE outcome='replayed'")})
    summary = re.findall(r"counter group\(s\) in (\d+) hardware pass", err)
    good, detail, _ = later_group_check(db)
    same = bool(deterministic(db)) and deterministic(db) == deterministic(unpacked5)
    row("packed: 5 groups in 1 hardware pass", "one execution per dispatch, results right, counters plausible and == unpacked run",
        f"{status}; executions {executions}; summary says {summary}; plausible={good}; deterministic == unpacked {same}; "
        f"{mean_overhead_ms(db):.1f} vs {mean_overhead_ms(unpacked5):.1f} ms per dispatch unpacked",
        rc == 0 and status == "PASS" and executions == [1] and summary == ["1"] and good and same)
    rc, out, err, db, wall = run([CHECKS, "inplace"], SPLIT, tag="packsplit")
    status, details = result_line(out, "inplace")
    executions = sorted({c for (c,) in query(db, "SELECT passes FROM kreplay_replay_cost WHERE outcome='replayed'")})
    summary = re.findall(r"counter group\(s\) in (\d+) hardware pass\(es\) \[([^\]]*)\]", err)
    values = [v for e in counters(db).values() for v in e["values"].values()]
    finite = bool(values) and all(v is not None and math.isfinite(v) for v in values)
    warps = {v for (d, p, k), v in deterministic(db).items() if k == "sm__warps_launched.sum"}
    hw = int(summary[0][0]) if summary else 0
    row("packed: split groups in 2+ hardware passes", "executions == hardware passes >= 2, results right, all finite",
        f"{status}; executions {executions}; summary {summary}; {len(values)} values finite={finite}; warps {sorted(warps)}",
        rc == 0 and status == "PASS" and hw >= 2 and executions == [hw] and finite and warps == {32768.0})


def per_dispatch_checks():
    """The section's checks, in order. Returns what the windows section compares with: Nsight
    Compute's warp and instruction counts of `inplace` and PyTorch's losses alone."""
    # --- the demo, the README's first command -------------------------------------------------
    for n in (1, 2, 5):
        rc, out, err, db, wall = run([DEMO], GROUPS[:n], tag=f"demo{n}")
        passes = passes_per_dispatch(db)
        full = [c for _, c, _ in passes if c == n]
        ok = rc == 0 and "verification PASSED" in out and len(passes) == 6 and len(full) == 6
        row(f"demo {n} group(s)", f"exit 0, verified, 6 dispatches x {n} pass(es)",
            f"exit {rc}, {'verified' if 'PASSED' in out else 'NOT verified'}, {len(passes)} dispatches, {len(full)} with {n} passes", ok)
        if n == 5:
            if db:
                shutil.copy(db, os.path.join(OUT, "demo5.db"))

    # --- the same through the kreplay CLI ------------------------------------------------------
    cli_dir = os.path.join(WORK, "cli")
    cli = [KREPLAY, "--pmc", *GROUPS[0], "--pmc", *GROUPS[1], "--replay-mode", "kernel",
           "--kernel-replay-beta-enabled", "-d", cli_dir, "-o", "demo", "-f", "rocpd", "csv", "--", DEMO]
    rc, out, err, _, wall = run(cli, None, tag="cli_demo")
    csvs = glob.glob(os.path.join(cli_dir, "**", "*counter_collection.csv"), recursive=True)
    csv_rows = sum(len(open(c).read().splitlines()) - 1 for c in csvs)
    row("kreplay CLI, demo, 2 groups", "exit 0, verified, counter_collection.csv rows",
        f"exit {rc}, {'verified' if 'PASSED' in out + err else 'NOT verified'}, {csv_rows} csv rows", rc == 0 and "PASSED" in out + err and csv_rows > 0)
    rc, out, err, _, wall = run([KREPLAY, "demo"], None, tag="cli_demo_cmd")
    row("kreplay demo (README first command)", "exit 0", f"exit {rc}, {wall:.1f}s", rc == 0)

    # --- result correctness under replay -------------------------------------------------------
    # 1 and 2 groups: packed into one hardware pass. 5 groups: `inplace` with every group its
    # own pass (KREPLAY_PACK_GROUPS=0: the pass-to-pass checks below need real passes), the
    # other programs with SPLIT packed (two hardware passes: a restore and two executions).
    for mode in ("inplace", "footprint", "streams", "launch_ex"):
        for n in (1, 2, 5):
            groups = GROUPS[:n] if n < 5 or mode == "inplace" else SPLIT
            env = {"KREPLAY_DEBUG": "1"} | (UNPACKED if n == 5 and mode == "inplace" else {})
            label = "" if n < 5 else (", unpacked" if mode == "inplace" else ", packed split")
            rc, out, err, db, wall = run([CHECKS, mode], groups, tag=f"{mode}{n}", env_extra=env)
            status, details = result_line(out, mode)
            passes = passes_per_dispatch(db)
            replayed = sum(1 for _, c, _ in passes if c == n)
            executions = [c for (c,) in query(db, "SELECT passes FROM kreplay_replay_cost WHERE outcome='replayed'")]
            ok = rc == 0 and status == "PASS" and len(passes) > 0 and replayed == len(passes)
            row(f"{mode} {n} group(s){label}", f"one-execution results, every dispatch {n} pass(es)",
                f"{status} {details}; {replayed}/{len(passes)} dispatches with {n} passes; executions {sorted(set(executions))}", ok)
            if mode == "inplace" and n == 5:
                inplace5 = db
            if mode == "inplace" and n == 1:
                inplace1 = db
    packing_checks(inplace5 if "inplace5" in dir() else None)
    # Two threads launching, measuring and destroying streams at once: a stream-destroy callback
    # once waited for the backend's lock while the other thread, holding it, waited in
    # cuptiRangeProfilerStop for the driver lock the destroy held (2 hangs in 6 runs).
    hung, bad = 0, 0
    for i in range(20):
        rc, out, err, db, wall = run([CHECKS, "streams"], GROUPS[:1], tag=f"streams_stress{i}", timeout=30)
        hung += rc == 124
        bad += rc not in (0, 124) or result_line(out, "streams")[0] != "PASS"
    row("streams 1 group, 20 runs", "none hangs, all right", f"{hung} hung, {bad} wrong", hung == 0 and bad == 0)

    # A library unloaded and loaded again: its __device__ variable leaves the inventory with it.
    rc, out, err, db, wall = run([CHECKS, "module_reload", os.path.join(WORK, "reload_kernel.cubin")],
                                 GROUPS[:2], tag="module_reload", env_extra=UNPACKED)
    status, details = result_line(out, "module_reload")
    passes = passes_per_dispatch(db)
    outcomes = sorted({o for (o,) in query(db, "SELECT outcome FROM kreplay_replay_cost")})
    row("module reloaded 3 times, 2 groups", "results right, 6 dispatches x 2 passes, all replayed",
        f"rc {rc} {status} {details}; {[c for _, c, _ in passes]}; outcomes {outcomes}",
        rc == 0 and status == "PASS" and [c for _, c, _ in passes] == [2] * 6 and outcomes == ["replayed"])

    # --- managed and stream-ordered pool memory: restored like cuMemAlloc's -------------------
    # Unpacked, each group re-executes the kernel; both increments must still land once. Packed
    # into one hardware pass, 2 groups cost one execution.
    for n, packed in ((1, True), (2, False), (2, True)):
        rc, out, err, db, wall = run([CHECKS, "managed_pool"], GROUPS[:n], tag=f"managed{n}{packed}",
                                     env_extra={} if packed else UNPACKED)
        status, details = result_line(out, "managed_pool")
        ws = warnings(db)
        unwarned = not any("managed" in w or "pool" in w for w in ws)
        expected = "managed=1 pool=1"
        label = f"managed+pool {n} group(s)" + ("" if n == 1 else (", packed" if packed else ", unpacked"))
        row(label, f"{expected}, no not-restored warning",
            f"{details}; warnings {ws}",
            rc == 0 and details.strip() == expected and unwarned)

    # --- a launch the driver refuses: the app sees its error, the tool carries on ---------------
    rc, out, err, db, wall = run([CHECKS, "bad_launch"], GROUPS[:2], tag="bad_launch")
    status, details = result_line(out, "bad_launch")
    passes = passes_per_dispatch(db)
    fatal = [w for w in warnings(db) if "fatal" in w]
    row("refused launch, 2 groups", "app sees the error; next dispatch 2 passes, correct; no fatal",
        f"{status} {details}; {[c for _, c, _ in passes]} passes; {len(fatal)} fatal",
        rc == 0 and status == "PASS" and [c for _, c, _ in passes] == [2] and not fatal)

    # --- a device that never drains hits the deadline -------------------------------------------
    rc, out, err, db, wall = run([CHECKS, "stuck"], GROUPS[:2], tag="stuck", timeout=60,
                                 env_extra={"KREPLAY_DRAIN_TIMEOUT": "2"}, kernel_trace=False,
                                 filter={"include_regex": None, "exclude_regex": "spin", "iteration_range": None})
    fatal = [w for w in warnings(db) if "fatal" in w]
    row("stuck stream, drain deadline 2 s", "abort (SIGABRT) within ~2 s, message, fatal warning in db",
        f"rc {rc} after {wall:.1f}s, stderr {'names the deadline' if 'within' in err else repr(err[-80:])}, {len(fatal)} fatal warning(s)",
        rc == -6 and wall < 20 and "within" in err and len(fatal) == 1)

    # --- no dispatch measured: the counter set-up begun at context creation is never taken -----
    # (dropping its profiler in the exit handler ended the application with SIGSEGV before)
    rc, out, err, db, wall = run([CHECKS, "inplace"], GROUPS[:2], tag="none_measured",
                                 filter={"include_regex": "^no_such_kernel$", "exclude_regex": None, "iteration_range": None})
    status, details = result_line(out, "inplace")
    row("every kernel filtered out, 2 groups", "results right, exit 0, its database written, nothing measured",
        f"rc {rc}; {status} {details}; database {'written' if db else 'missing'}; {len(counters(db))} measured dispatch pass(es)",
        rc == 0 and status == "PASS" and db is not None and bool(query(db, "SELECT 1 FROM rocpd_info_process"))
        and not counters(db))

    # --- counters: no NaN for metrics only in later groups, plausible values -------------------
    ok, detail, table = later_group_check(inplace5 if "inplace5" in dir() else None)
    row("5 groups: later-group metrics finite", "all finite; pass 4 sm__ctas_launched.sum == grid; pass 2 lts__t_sectors.sum >= 131072", detail, ok)

    # The check must catch the known-wrong sequence (SetConfig switched on one object: NaN).
    rc, out, err, db, wall = run([CHECKS, "inplace"], GROUPS, tag="seq_switch", env_extra={"KREPLAY_RANGE_PROFILER_SEQUENCE": "switch"} | UNPACKED)
    caught, detail, _ = later_group_check(db)
    row("NaN check catches the SetConfig-switch sequence", "check fails (NaN or implausible)", detail, not caught)

    # --- timestamps: the records' duration against the kernel's own gpu__time_duration ---------
    # A replayed unit runs once more without counters after its measured executions, and its
    # launch times give every record its duration (on by default): the span is the kernel's own
    # duration within launch jitter, not the profiler's work around it.
    durations = [(e["duration"], e["values"].get("gpu__time_duration.sum")) for k, e in table.items() if k[1] == 4]
    row("timestamps bracket the kernel", "0.5 x gpu__time_duration <= end-start <= 2 x gpu__time_duration + 20 us",
        f"{durations[:3]} (end-start, gpu__time_duration) ns",
        bool(durations) and all(g is not None and g > 0 and 0.5 * g <= d <= 2 * g + 20000 for d, g in durations))

    # Without that execution (KREPLAY_TIMING_EXECUTION=0) the records keep their measured
    # executions' times (the profiler's work around the kernel included); results and
    # deterministic counters are the same.
    rc, out, err, db, wall = run([CHECKS, "inplace"], GROUPS, tag="no_timing_execution",
                                 env_extra={"KREPLAY_TIMING_EXECUTION": "0"} | UNPACKED)
    status, details = result_line(out, "inplace")
    untimed = [(e["duration"], e["values"].get("gpu__time_duration.sum")) for k, e in counters(db).items() if k[1] == 4]
    same = bool(deterministic(db)) and deterministic(db) == deterministic(inplace5 if "inplace5" in dir() else None)
    row("KREPLAY_TIMING_EXECUTION=0: results and counters as with it",
        "results right; warps/inst equal to the default run's; the measured executions' times",
        f"rc {rc}; {status} {details}; {untimed[:3]} (end-start, gpu__time_duration) ns; deterministic as with it {same}",
        rc == 0 and status == "PASS" and same and bool(untimed))

    # --- deterministic counters equal across passes --------------------------------------------
    by_dispatch = {}
    for (d, p), e in table.items():
        by_dispatch.setdefault(d, {})[p] = e["values"]
    same = True
    samples = []
    for d, ps in by_dispatch.items():
        warps = [ps[p].get("sm__warps_launched.sum") for p in (0, 1, 2) if p in ps]
        inst = [ps[p].get("smsp__inst_executed.sum") for p in (0, 3) if p in ps]
        samples.append((warps[:1], inst[:1]))
        same &= len(warps) == 3 and len(set(warps)) == 1 and len(inst) == 2 and len(set(inst)) == 1
    row("deterministic counters equal across passes", "warps_launched equal in passes 0,1,2; inst_executed equal in 0,3",
        f"{len(by_dispatch)} dispatches, equal={same}, e.g. {samples[:1]}", bool(by_dispatch) and same)

    # --- the same counters as Nsight Compute ---------------------------------------------------
    ncu_list = ncu_reference()
    ours = []
    for n_db, tag in ((inplace1 if "inplace1" in dir() else None, "1 group"), (inplace5 if "inplace5" in dir() else None, "5 groups")):
        t = counters(n_db)
        per_dispatch = {}
        for (d, p), e in sorted(t.items()):
            for k, v in e["values"].items():
                if k in ("sm__warps_launched.sum", "smsp__inst_executed.sum"):
                    per_dispatch.setdefault(d, {}).setdefault(k, v)
        ours.append((tag, [per_dispatch[d] for d in sorted(per_dispatch)]))
    for tag, lst in ours:
        ok = bool(ncu_list) and len(lst) == len(ncu_list) and all(
            abs(a.get(m, -1) - b.get(m, -2)) < 0.5 for a, b in zip(lst, ncu_list) for m in ("sm__warps_launched.sum", "smsp__inst_executed.sum"))
        row(f"counters == ncu ({tag})", f"ncu: {ncu_list[:1]} x{len(ncu_list)}", f"kreplay: {lst[:1]} x{len(lst)}", ok)

    # --- PyTorch training loss bit-identical ------------------------------------------------------
    rc0, out0, err0, _, wall0 = run([sys.executable, "tests/gpu/torch_train.py"], None, tag="torch_plain", timeout=300)
    rc2, out2, err2, db2, wall2 = run([sys.executable, "tests/gpu/torch_train.py"], GROUPS[:2], tag="torch2", timeout=580)
    passes = passes_per_dispatch(db2)
    replayed = sum(1 for _, c, _ in passes if c == 2)
    loss0 = re.findall(r"loss (\S+)", out0)
    torch_loss = loss0
    loss2 = re.findall(r"loss (\S+)", out2)
    row("PyTorch loss bit-identical (2 groups)", f"{loss0}", f"{loss2}; {replayed}/{len(passes)} dispatches replayed, {wall2:.0f}s vs {wall0:.0f}s",
        rc0 == 0 and rc2 == 0 and loss0 and loss0 == loss2 and replayed > 0)

    # --- per-dispatch overhead -------------------------------------------------------------------
    for tag, n_db in (("inplace 5 groups", inplace5 if "inplace5" in dir() else None),):
        costs = query(n_db, "SELECT passes, bytes_snapshotted, staging, drain_ns, snapshot_ns, pass_ns, restore_ns, "
                            "timing_execution_ns FROM kreplay_replay_cost WHERE outcome='replayed'")
        if costs:
            totals = [(c[3] + c[4] + sum(json.loads(c[5])) + c[6] + c[7]) / 1e6 for c in costs]
            per_pass = [sum(json.loads(c[5])) / max(1, c[0]) / 1e6 for c in costs]
            detail = (f"{len(costs)} dispatches, {costs[0][1]} B staged on {costs[0][2]}, total per dispatch mean {sum(totals)/len(totals):.1f} ms "
                      f"(first {totals[0]:.1f}, last {totals[-1]:.1f}), per pass {sum(per_pass)/len(per_pass):.1f} ms, snapshot {costs[-1][4]/1e6:.2f} ms, restores {costs[-1][6]/1e6:.2f} ms")
            # Speed is the benchmark's business (bench/run.py); here it is reported only.
            experiments.append(f"overhead ({tag}): {detail}")
        else:
            row(f"overhead ({tag})", "replay cost rows recorded", "no replay cost rows", False)

    # --- experiment: a faster correct sequence? (reported, not a check) --------------------------
    for seq in ("reenable", "scheduled"):
        rc, out, err, db, wall = run([CHECKS, "inplace"], GROUPS, tag=f"seq_{seq}", env_extra={"KREPLAY_RANGE_PROFILER_SEQUENCE": seq} | UNPACKED)
        status, details = result_line(out, "inplace")
        correct, detail, _ = later_group_check(db)
        costs = query(db, "SELECT pass_ns FROM kreplay_replay_cost WHERE outcome='replayed'")
        per_pass = [sum(json.loads(c[0])) / max(1, len(json.loads(c[0]))) / 1e6 for c in costs]
        line = (f"sequence {seq}: results {status}, counters {'correct' if correct else 'WRONG'} ({detail}); "
                f"per pass {', '.join(f'{p:.1f}' for p in per_pass)} ms; stderr {err.strip()[-200:]!r}")
        experiments.append(line)
        log("EXPERIMENT " + line)
    with open(os.path.join(OUT, "experiments.txt"), "w") as f:
        f.write("\n".join(experiments) + "\n")
    return ncu_list, torch_loss
