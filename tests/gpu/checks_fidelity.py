"""Section `fidelity`: --cache-control all and none on memory-bound kernels (DRAM and L2 counters
in two hardware passes) against ncu's, and a device too full for the L2 flusher."""
import os
import sys

from harness import (GROUPS, WORK, app_lines, counters, experiments, ncu_program, query, row, run, warnings)


# Counter fidelity (issue 19): DRAM and L2 counters in two hardware passes, the four groups in three
# (packed [0+2, 1, 3]): dram read in passes 0 and 3, dram write and L2 reads in passes 2 and 3.
FIDELITY = [
    ["sm__warps_launched.sum", "smsp__inst_executed.sum", "dram__bytes_read.sum"],
    ["smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"],
    ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", "dram__bytes_write.sum", "lts__t_sectors_op_read.sum"],
    ["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
     "lts__t_sectors_op_read.sum"],
]
# (metric, pass of execution 0, pass of a later execution); bytes, or sectors of 32 bytes.
FIDELITY_PAIRS = [("dram__bytes_read.sum", 0, 3), ("dram__bytes_write.sum", 2, 3), ("lts__t_sectors_op_read.sum", 2, 3)]
MEMORY_METRICS = [m for m, _, _ in FIDELITY_PAIRS]
# Values this small are compared absolutely: 64 KiB (2048 sectors).
FLOOR = {"dram__bytes_read.sum": 65536, "dram__bytes_write.sum": 65536, "lts__t_sectors_op_read.sum": 2048}


def near(a, b, metric, tolerance):
    return a is not None and b is not None and abs(a - b) <= max(tolerance * max(abs(a), abs(b)), FLOOR[metric])


def agrees(value, references, metric):
    """Within 5% of one of ncu's runs, or inside the range they span: where ncu's own runs with
    --cache-control all (the metrics alone, twice; every metric of the four groups, in ncu's own
    pass layout, its later passes after its own restores) disagree by more than 5%, that range is
    how far the count is reproducible at all (an SGEMM's DRAM writes: 0.02-0.4 MB alone, 2.1-2.5
    MB with every metric, measured 2026-12-02 and 03). With `none`, ncu's later passes follow its own
    save and are no reference for pass 0: there `references` holds only the metrics-alone runs."""
    known = [r for r in references if r is not None]
    return value is not None and bool(known) and (
        any(near(value, r, metric, 0.05) for r in known) or min(known) <= value <= max(known))


def passes_agree(a, b, references, metric):
    """Two passes of a dispatch within 2% of each other, or no further apart than ncu's own runs
    (where ncu's runs spread wider than 2%, as an SGEMM's few DRAM writes do, its spread is the
    count's reproducibility: H100, 2026-12-05, passes 30464/125952 B against ncu's 46592-2429696)."""
    known = [r for r in references if r is not None]
    return near(a, b, metric, 0.02) or (
        a is not None and b is not None and bool(known) and abs(a - b) <= max(known) - min(known))


def fidelity_checks():
    """--cache-control all and none on memory-bound kernels, with DRAM and L2 counters measured in
    two hardware passes: with `all` every pass starts from a flushed L2, so the passes agree and
    equal ncu --cache-control all; with `none`, pass 0 is what ncu --cache-control none sees."""
    argv = [os.path.join(WORK, "memory_bound"), "3"]
    rc0, out0, _, _, wall0 = run(argv, None, tag="fidelity_plain")
    reference = app_lines(out0)
    every_metric = list(dict.fromkeys(m for g in FIDELITY for m in g))
    # Per dispatch, ncu's runs: the metrics alone, every metric, the metrics alone again (its own
    # run-to-run spread: an SGEMM's DRAM writes under `all`, 0.02-0.4 MB alone across runs).
    ncu = {control: list(zip(ncu_program(argv, MEMORY_METRICS, cache_control=control),
                             ncu_program(argv, every_metric, cache_control=control),
                             ncu_program(argv, MEMORY_METRICS, cache_control=control)))
           for control in ("all", "none")}
    ncu["det"] = ncu_program(argv)
    window = {"count": 64}
    # The last two are diagnostics, their counter rows experiment lines (not judged): was what the
    # `none` DRAM-write row misses the dirty lines of device staging's snapshot copy? Host staging
    # closes windows at every call, so its control closes them too. On the H200 (2026-12-02) both
    # moved the in-place update's pass 0 further from ncu alone (DRAM reads 2.2e6 and 5.3e6 B
    # against 1.68e7: the snapshot taken right before each kernel brings its data into L2), so
    # the S0 snapshot's own traffic, not where it is staged, is what pass 0 sees under `none`.
    variants = [("all", "", {}, "device"), ("none", "", {}, "device"),
                ("none", ", KREPLAY_WINDOW_SPANS=0", {"KREPLAY_WINDOW_SPANS": "0"}, "device"),
                ("none", ", KREPLAY_HOST_STAGING=1", {"KREPLAY_HOST_STAGING": "1"}, "host")]
    for control, suffix, env_extra, staging in variants:
        label = control + suffix
        rc, out, err, db, wall = run(argv, FIDELITY, tag="_".join(["fidelity", control, *(f"{k}{v}" for k, v in env_extra.items())]),
                                     replay_window=window,
                                     cache_control=control, env_extra=env_extra)
        table = counters(db)
        ids = sorted({d for d, _ in table})
        per = [{p: table.get((d, p), {}).get("values", {}) for p in range(4)} for d in ids]
        kernels = [table.get((d, 0), {}).get("kernel", "?") for d in ids]
        caches = [c for (c,) in query(db, "SELECT cache FROM kreplay_replay_cost ORDER BY dispatch_id")]
        clocks = query(db, "SELECT MIN(sm_clock_min_mhz), MAX(sm_clock_max_mhz), MIN(memory_clock_min_mhz), "
                           "MAX(memory_clock_max_mhz) FROM kreplay_replay_cost")
        meta = query(db, "SELECT value FROM rocpd_metadata WHERE tag = 'cache_control'")
        placed = sorted({p for (p,) in query(db, "SELECT staging FROM kreplay_replay_cost WHERE bytes_snapshotted > 0")})
        staging_ok = placed == [staging]
        same_output = rc == 0 and rc0 == 0 and app_lines(out) == reference and bool(reference)
        expected_state = "flushed" if control == "all" else "as_left"
        det_ok = bool(ncu["det"]) and len(per) == len(ncu["det"]) and all(
            per[i][0].get(m) == ncu["det"][i].get(m) for i in range(len(per)) for m in ncu["det"][i])
        row(f"fidelity: --cache-control {label}, results and records",
            f"output == alone, {len(ncu['det'])} dispatches x 4 passes, cache '{expected_state}', metadata '{control}', "
            f"warps/inst == ncu, clocks read, staged on the {staging}",
            f"output same {same_output}; {len(per)} dispatches; caches {sorted(set(caches))}; metadata {meta}; staging {placed}; "
            f"== ncu {det_ok}; clocks (SM, memory MHz) {clocks}; {wall:.1f}s vs {wall0:.1f}s alone; {err.strip()[-200:]!r}",
            same_output and len(per) == len(ncu["det"]) > 0 and set(caches) == {expected_state}
            and meta == [(control,)] and det_ok and bool(clocks) and (clocks[0][0] or 0) > 0 and staging_ok)
        for metric, first, later in FIDELITY_PAIRS:
            pairs = [(k, v[first].get(metric), v[later].get(metric)) for k, v in zip(kernels, per)]
            # With `none` only ncu's metrics-alone runs (its pass 0) are references (see agrees).
            references = [[run_.get(metric) for run_ in (runs if control == "all" else runs[::2])]
                          for runs in ncu[control]]
            measured = [a for _, a, _ in pairs] + ([b for _, _, b in pairs] if control == "all" else [])
            vs_ncu = len(pairs) == len(references) and all(
                agrees(v, r, metric) for v, r in zip(measured, references + references))
            if control == "all":
                across = len(pairs) == len(references) and all(
                    passes_agree(a, b, r, metric) for (_, a, b), r in zip(pairs, references))
                ok, expected = across and vs_ncu, ("passes within 2% (or no further apart than ncu's runs), "
                                                   "each agreeing with ncu --cache-control all")
            else:
                ok, expected = vs_ncu, "pass 0 agreeing with ncu --cache-control none"
            expected += (" (within 5% of one of ncu's runs, alone twice and with every metric, or between them)"
                         if control == "all" else " (within 5% of one of ncu's two runs with the metrics alone, or between them)")
            shown = "; ".join(f"{k[:14]} {a:.4g}/{b:.4g} vs {'/'.join(f'{x:.4g}' for x in r if x is not None)}"
                              for (k, a, b), r in list(zip(pairs, references))[:3] if a is not None and b is not None)
            bad = [f"{k[:14]} {a}/{b} vs {r}" for (k, a, b), r in zip(pairs, references)
                   if not (agrees(a, r, metric) and (control == "none" or (agrees(b, r, metric) and passes_agree(a, b, r, metric))))]
            seen = (f"{len(pairs)} dispatches (pass {first}/pass {later} vs ncu {'alone/in groups/alone again' if control == 'all' else 'alone/alone again'}): {shown}"
                    + (f"; off: {'; '.join(bad[:2])}" if bad else ""))
            if suffix:
                experiments.append(f"fidelity --cache-control {label}, {metric} ({'within' if ok else 'not within'} "
                                   f"5% of ncu alone): {seen}")
            else:
                row(f"fidelity: --cache-control {label}, {metric}", expected, seen, ok)


FULL_DEVICE_SCRIPT = """
import torch
free, _ = torch.cuda.mem_get_info()
hold = torch.empty(free - (200 << 20), dtype=torch.uint8, device="cuda")
x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
for _ in range(3):
    x = x * 2 + 1
print("sum", float(x.sum()))
"""


def full_device_check():
    """A device with too little free memory for the flusher: measured as with --cache-control
    none, warned once, the application's results unchanged (it keeps its memory). 200 MiB are
    left free, less than the in-application flusher's buffer (about 75 MiB on the H200) with
    the 256 MiB staging reserve."""
    argv = [sys.executable, "-c", FULL_DEVICE_SCRIPT]
    rc0, out0, _, _, _ = run(argv, None, tag="full_plain")
    rc, out, err, db, wall = run(argv, GROUPS[:2], tag="full_device")
    caches = sorted({c for (c,) in query(db, "SELECT cache FROM kreplay_replay_cost WHERE passes > 0")})
    warned = [w for w in warnings(db) if "cannot be flushed" in w]
    outcomes = sorted({o for (o,) in query(db, "SELECT outcome FROM kreplay_replay_cost")})
    row("fidelity: device memory too full for the flusher", "output == alone, rc 0, cache 'as_left', one warning",
        f"rc {rc0}/{rc}; output {out.strip()!r} vs {out0.strip()!r}; outcomes {outcomes}; caches {caches}; warnings {[w[:150] for w in warned]}",
        rc == rc0 == 0 and out == out0 and "sum" in out and caches == ["as_left"] and len(warned) == 1)
