"""Section `multipass`: a metric that alone needs several hardware passes, given to --metrics with a
one-pass metric and alone, against Nsight Compute's."""
import math
import os
import re

from harness import CHECKS, KREPLAY, WORK, cli_csv_values, ncu_program, result_line, row, run


def multipass_metric_checks():
    """A metric that alone needs several hardware passes (Nsight Compute's first ask), given to
    --metrics with a one-pass one: every dispatch gets both; warps equal Nsight Compute's exactly,
    the throughput percentage is within 25% of Nsight Compute's (it depends on clocks and cache
    state), and the application's results stay right."""
    metrics = ["sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm__warps_launched.sum"]
    out_dir = os.path.join(WORK, "multipass")
    argv = [KREPLAY, "--metrics", ",".join(metrics), "--replay-mode", "kernel", "--kernel-replay-beta-enabled",
            "-d", out_dir, "-o", "out", "-f", "csv", "--", CHECKS, "inplace"]
    rc, out, err, _, wall = run(argv, None, tag="multipass")
    status, details = result_line(out, "inplace")
    ours = {m: cli_csv_values(out_dir, m) for m in metrics}
    ncu = ncu_program([CHECKS, "inplace"], metrics=tuple(metrics))
    ncu_values = {m: [e.get(m) for e in ncu] for m in metrics}
    warps_same = bool(ours[metrics[1]]) and ours[metrics[1]] == ncu_values[metrics[1]]
    tp, tp_ncu = ours[metrics[0]], ncu_values[metrics[0]]
    tp_close = bool(tp) and len(tp) == len(tp_ncu) and all(
        b and math.isfinite(a) and abs(a - b) <= 0.25 * b for a, b in zip(tp, tp_ncu))
    layout = re.search(r"hardware pass\(es\) \[([^\]]*)\]", err)
    row("--metrics with a metric needing several passes", "results right; warps == ncu; throughput within 25% of ncu; spans several passes",
        f"{status}; warps {ours[metrics[1]][:2]} vs ncu {ncu_values[metrics[1]][:2]}; throughput {[round(v, 1) for v in tp[:3]]} vs ncu "
        f"{[round(v, 1) if v else v for v in tp_ncu[:3]]}; passes [{layout.group(1) if layout else '?'}]; {wall:.1f}s; {err.strip()[-200:]!r}",
        rc == 0 and status == "PASS" and warps_same and tp_close and bool(layout) and "over" in layout.group(1))


def lone_multipass_metric_check():
    """The same metric given alone (one group over 8 executions): every dispatch still gets it."""
    metric = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    out_dir = os.path.join(WORK, "multipass_alone")
    argv = [KREPLAY, "--metrics", metric, "--replay-mode", "kernel", "--kernel-replay-beta-enabled",
            "-d", out_dir, "-o", "out", "-f", "csv", "--", CHECKS, "inplace"]
    rc, out, err, _, wall = run(argv, None, tag="multipass_alone")
    status, _ = result_line(out, "inplace")
    ours = cli_csv_values(out_dir, metric)
    theirs = [e.get(metric) for e in ncu_program([CHECKS, "inplace"], metrics=(metric,))]
    close = bool(ours) and len(ours) == len(theirs) and all(
        b and math.isfinite(a) and abs(a - b) <= 0.25 * b for a, b in zip(ours, theirs))
    row("--metrics with only a metric needing several passes", "results right; one value per dispatch, within 25% of ncu",
        f"{status}; {[round(v, 1) for v in ours[:3]]} vs ncu {[round(v, 1) if v else v for v in theirs[:3]]}; {wall:.1f}s; "
        f"{err.strip()[-160:]!r}", rc == 0 and status == "PASS" and close)
