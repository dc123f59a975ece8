"""Section `effects`: what replay must not repeat or lose (device printf, the device heap, pageable
host memory, processes ended by a signal with a window open), and two profiled processes on one
GPU at once."""
import math
import os
import signal
import subprocess
import sys
import threading
import time

from harness import (CHECKS, GROUPS, HEADLINE, KREPLAY, UNPACKED, WORK, counters, experiments, log,
                     passes_per_dispatch, query, result_line, row, run, warnings)


def side_effect_checks():
    """What replay must not repeat or lose, with the four headline groups in three hardware passes:
    a kernel calling printf prints what it prints alone (it runs once, said in the outcome); a
    kernel using device new/delete runs once and computes right; a process ended by abort() or
    SIGTERM with its window open keeps every pass of every dispatch; one that crashes keeps every
    dispatch it ran once."""
    window = {"count": 64}
    outcomes = lambda db: sorted({o for (o,) in query(db, "SELECT outcome FROM kreplay_replay_cost")})
    rc0, out0, _, _, _ = run([CHECKS, "printf"], None, tag="printf_alone")
    rc, out, err, db, wall = run([CHECKS, "printf"], HEADLINE, tag="printf_replay", replay_window=window)
    hello = lambda text: sorted(l for l in text.splitlines() if l.startswith("hello"))
    passes = passes_per_dispatch(db)
    row("device printf runs once", "stdout == alone (4 hello lines), printf kernel declined_device_printf, the other kernel 4 passes",
        f"{len(hello(out))} vs {len(hello(out0))} hello lines, same {hello(out) == hello(out0)}; {result_line(out, 'printf')[0]}; "
        f"outcomes {outcomes(db)}; passes {[c for _, c, _ in passes]}; {err.strip()[-160:]!r}",
        rc0 == 0 and rc == 0 and len(hello(out0)) == 4 and hello(out) == hello(out0) and "declined_device_printf" in outcomes(db)
        and [c for _, c, _ in passes][-1:] == [4])
    rc, out, err, db, wall = run([CHECKS, "heap"], HEADLINE, tag="heap_replay", replay_window=window)
    status, details = result_line(out, "heap")
    row("device new/delete runs once", "results right, exit 0, declined_device_heap",
        f"rc {rc} {status} {details}; outcomes {outcomes(db)}; {err.strip()[-160:]!r}",
        rc == 0 and status == "PASS" and "declined_device_heap" in outcomes(db))
    rc, out, err, db, wall = run([CHECKS, "pageable"], HEADLINE, tag="pageable_replay", replay_window=window)
    status, details = result_line(out, "pageable")
    if status == "SKIP":
        experiments.append(f"pageable host memory check not run: {details}")
    else:
        row("kernel on malloc'd host memory (pageable access) runs once", "results right, exit 0, declined_pageable_host",
            f"rc {rc} {status} {details}; outcomes {outcomes(db)}; {err.strip()[-160:]!r}",
            rc == 0 and status == "PASS" and outcomes(db) == ["declined_pageable_host"])
    for mode, signal in (("abort", 6), ("sigterm", 15)):
        rc, out, err, db, wall = run([CHECKS, mode], HEADLINE, tag=f"signal_{mode}", replay_window=window)
        passes = passes_per_dispatch(db)
        values = [v for e in counters(db).values() for v in e["values"].values()]
        finite = bool(values) and all(v is not None and math.isfinite(v) for v in values)
        row(f"ended by {mode} with a window open", f"rc -{signal}; 5 dispatches x 4 passes, all finite",
            f"rc {rc}; {[c for _, c, _ in passes]}; {len(values)} values finite={finite}; {wall:.1f}s; {err.strip()[-120:]!r}",
            rc == -signal and [c for _, c, _ in passes] == [4] * 5 and finite)
    # A crash right after 200 dispatches run once (one group): the crashing thread waits for the
    # database writer, so none of the last ones, not yet committed, is lost.
    rc, out, err, db, wall = run([CHECKS, "segv"], GROUPS[:1], tag="signal_segv")
    passes = passes_per_dispatch(db)
    row("ended by a crash (SIGSEGV) right after 200 dispatches run once", "rc -11; 200 dispatches x 1 pass recorded",
        f"rc {rc}; {len(passes)} dispatches, passes {sorted({c for _, c, _ in passes})}; {wall:.1f}s; {err.strip()[-120:]!r}",
        rc == -11 and len(passes) == 200 and all(c == 1 for _, c, _ in passes))
    two_processes_one_gpu()
    merged_processes()
    ctrl_c_pytorch()


def two_processes_one_gpu():
    """Two profiled processes at once on the one GPU (issue 17, docs/kernel-replay.md): both
    compute right and exit 0; each either has its counters (every dispatch in both passes) or
    says in one warning that the counters are in use by another process and runs unprofiled."""
    results = {}

    def one(tag):
        results[tag] = run([CHECKS, "streams"], GROUPS[:2], tag=tag, env_extra=UNPACKED)

    threads = [threading.Thread(target=one, args=(f"two_procs_{i}",)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seen, ok = [], True
    for tag, (rc, out, err, db, wall) in sorted(results.items()):
        status, _ = result_line(out, "streams")
        passes = [c for _, c, _ in passes_per_dispatch(db)]
        busy = [w for w in warnings(db) if "in use by another process" in w]
        outcome = "measured" if passes and set(passes) == {2} else ("busy, warned" if busy else f"passes {passes}")
        seen.append(f"rc {rc} {status}, {outcome}, {wall:.1f}s")
        ok = ok and rc == 0 and status == "PASS" and outcome in ("measured", "busy, warned")
    row("two profiled processes on one GPU at once, 2 groups", "both right and exit 0; each measured, or warned 'in use by another process' and unprofiled",
        "; ".join(seen), ok and len(seen) == 2)


def merged_processes():
    """Two processes of one run written to one rocpd file (issue 49: `-o` without %pid%, the
    large tables of the second appended by pages): `checks streams` run twice, one after the
    other, with two groups in two passes. The merged database passes SQLite's integrity check,
    holds both processes (the shell, which runs no kernel, may be a process row too) with every
    dispatch in both passes, and their counters (deterministic, the same workload) are the same,
    dispatch for dispatch."""
    out_dir = os.path.join(WORK, "merged")
    script = f"'{CHECKS}' streams && '{CHECKS}' streams"
    argv = [KREPLAY, "--pmc", *GROUPS[0], "--pmc", *GROUPS[1], "--replay-mode", "kernel",
            "--kernel-replay-beta-enabled", "-f", "rocpd", "-d", out_dir, "-o", "r", "--", "sh", "-c", script]
    started = time.time()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=os.environ | UNPACKED)
    wall = time.time() - started
    log(f"=== merged: {' '.join(argv)} rc={p.returncode} wall={wall:.1f}s")
    log(p.stdout)
    log(p.stderr)
    db = os.path.join(out_dir, "r_results.db")
    check = query(db, "PRAGMA integrity_check")
    pids = [pid for (pid,) in query(db, "SELECT pid FROM rocpd_info_process ORDER BY id")]
    passes = query(db, "SELECT K.pid, COUNT(DISTINCT K.id), MIN(c), MAX(c) FROM (SELECT dispatch_row, COUNT(*) AS c "
                       "FROM kreplay_dispatch_pass GROUP BY dispatch_row) JOIN rocpd_kernel_dispatch K ON K.id = dispatch_row "
                       "GROUP BY K.pid ORDER BY K.pid")
    values = {}
    for pid, dispatch, replay_pass, counter, value in query(
            db, "SELECT pid, dispatch_id, replay_pass, counter_name, value FROM kreplay_pass_counters "
                "WHERE counter_name IN ('sm__warps_launched.sum', 'smsp__inst_executed.sum')"):
        values.setdefault(pid, {})[(dispatch, replay_pass, counter)] = value
    same = len(values) == 2 and len(set(map(len, values.values()))) == 1 and \
        list(values.values())[0] == list(values.values())[1]
    row("two processes of one run in one rocpd file", "integrity ok; 2 processes, each dispatch 2 passes; same counters",
        f"rc {p.returncode}; {check}; pids {len(pids)}; per process (dispatches, min, max passes) "
        f"{[tuple(r[1:]) for r in passes]}; {sum(map(len, values.values()))} values, same {same}; {wall:.1f}s",
        p.returncode == 0 and check == [("ok",)] and len(pids) >= 2 and len(passes) == 2
        and all(r[1] > 0 and r[2] == r[3] == 2 for r in passes) and same)


def ctrl_c_pytorch():
    """Ctrl-C mid-run (issue 47): a PyTorch training loop under kernel replay with two groups,
    SIGINT sent to the whole process group (as a terminal does) once the loop has printed its 5th
    step. The application ends by the signal (or by Python's KeyboardInterrupt) and kreplay exits 1; the database and the
    CSV read back whole; every dispatch recorded has both passes (every closed window, and the
    window open at the signal, which the finish closed); nothing is said lost."""
    out_dir = os.path.join(WORK, "ctrl_c_torch")
    argv = [KREPLAY, "--pmc", *GROUPS[0], "--pmc", *GROUPS[1], "--replay-mode", "kernel",
            "--kernel-replay-beta-enabled", "-f", "rocpd", "csv", "-d", out_dir, "-o", "r", "--",
            sys.executable, "tests/gpu/torch_train.py", "100000"]
    started = time.time()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    steps = 0
    for line in p.stdout:
        steps += line.startswith("step ")
        if steps == 5 or time.time() - started > 240:
            break
    os.killpg(p.pid, signal.SIGINT)
    try:
        rest, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        rest, err = p.communicate()
    wall = time.time() - started
    log(f"=== ctrl_c_torch: {' '.join(argv)} rc={p.returncode} wall={wall:.1f}s steps before SIGINT={steps}")
    log(rest)
    log(err)
    db = os.path.join(out_dir, "r_results.db")
    whole = os.path.exists(db) and query(db, "PRAGMA integrity_check") == [("ok",)]
    passes = passes_per_dispatch(db) if whole else []
    per_dispatch = sorted({c for _, c, _ in passes})
    csv_path = os.path.join(out_dir, "r_counter_collection.csv")
    csv_rows = sum(1 for _ in open(csv_path)) - 1 if os.path.exists(csv_path) else -1
    # Python turns SIGINT into KeyboardInterrupt and exits 1 through its exit handlers; a
    # program that keeps SIGINT's default action is ended by it: either is said.
    said = "ended by signal 2" in err or "KeyboardInterrupt" in err
    # What kreplay says of records it could not keep; its note on PyTorch's own CUPTI (the
    # application's profiler events, not kreplay's records) is no such line.
    lost = [l for l in err.splitlines() if ("lost" in l or "without being recorded" in l or "dropped" in l)
            and "its own CUPTI" not in l]
    row("PyTorch training, Ctrl-C mid-run under kernel replay (2 groups)",
        "rc 1; SIGINT said (or Python's KeyboardInterrupt); db intact; every recorded dispatch has passes {0,1}; CSV rows; nothing lost",
        f"rc {p.returncode}; {steps} steps; said {said}; db whole {whole}; {len(passes)} dispatches, passes per dispatch {per_dispatch}; "
        f"{csv_rows} CSV rows; lost lines {lost[:2]}; {wall:.1f}s; {err.strip()[-200:]!r}",
        steps == 5 and p.returncode == 1 and said and whole and len(passes) > 0 and per_dispatch == [2] and csv_rows > 0 and not lost)
