"""The GPU checks behind tests/gpu/run.sh: runs the test programs under kreplay's injected
library with 1, 2 and 5 counter groups, reads the per-process databases, and prints one table:
check, expected, seen, PASS/FAIL. Until the `kreplay` CLI drives kernel replay end to end, the
library is injected directly (CUDA_INJECTION64_PATH + KREPLAY_CONFIG), as the CLI does.
Each section (KREPLAY_GPU_ONLY) is a file of its own, checks_<section>.py; what they share
(running tools, reading databases, the rows) is harness.py.
"""
import os
import sys

import checks_api
import checks_cache
import checks_core
import checks_deferral
import checks_effects
import checks_fidelity
import checks_graphs
import checks_markers
import checks_memory
import checks_multigpu
import checks_multipass
import checks_sections
import checks_trace
import checks_windows
from harness import OUT, experiments, rows


# KREPLAY_GPU_ONLY: sections to run, comma-separated (empty: all); `core` is the per-dispatch
# checks that no other section holds.
ONLY = {part.strip() for part in os.environ.get("KREPLAY_GPU_ONLY", "").split(",") if part.strip()}
SECTIONS = {"core", "windows", "cache", "deferral", "fidelity", "multipass", "effects", "sections", "trace", "multigpu", "graphs", "markers", "api", "memory"}
if ONLY - SECTIONS:
    sys.exit(f"KREPLAY_GPU_ONLY: unknown section(s) {sorted(ONLY - SECTIONS)}; use some of {sorted(SECTIONS)}, comma-separated")


def selected(section):
    return not ONLY or section in ONLY


def main():
    # The windows section compares with references the core section measures; without it, it
    # measures them itself before any section runs.
    ncu_list, torch_loss = [], []
    if "windows" in ONLY and "core" not in ONLY:
        ncu_list, torch_loss = checks_windows.references()
    if selected("deferral"):
        checks_deferral.deferral_checks()
    if selected("fidelity"):
        checks_fidelity.fidelity_checks()
        checks_fidelity.full_device_check()
    if selected("multipass"):
        checks_multipass.multipass_metric_checks()
        checks_multipass.lone_multipass_metric_check()
    if selected("effects"):
        checks_effects.side_effect_checks()
    if selected("sections"):
        checks_sections.section_checks()
    if selected("cache"):
        checks_cache.identity_cache_checks()
    if selected("trace"):
        checks_trace.trace_check()
        checks_trace.untimed_trace_check()
        checks_trace.reset_trace_check()
    if selected("multigpu"):
        checks_multigpu.multi_gpu_check()
    if selected("graphs"):
        checks_graphs.graph_checks()
    if selected("markers"):
        checks_markers.marker_checks()
    if selected("api"):
        checks_api.api_checks()
    if selected("memory"):
        checks_memory.memory_checks()
    if selected("core"):
        ncu_list, torch_loss = checks_core.per_dispatch_checks()
    if selected("windows"):
        checks_windows.window_checks(ncu_list, torch_loss)

    # --- the table -------------------------------------------------------------------------------
    width = [max(len(r[i]) for r in rows + [("check", "expected", "seen", "result")]) for i in range(4)]
    width = [min(w, 90) for w in width]
    lines = []
    header = ("check", "expected", "seen", "result")
    for r in [header] + rows:
        lines.append(" | ".join(str(c)[:width[i]].ljust(width[i]) for i, c in enumerate(r)))
    table_text = "\n".join(lines)
    passed = sum(1 for r in rows if r[3] == "PASS")
    summary = f"{passed} passed, {len(rows) - passed} failed"
    with open(os.path.join(OUT, "table.txt"), "w") as f:
        f.write("\n".join(" | ".join(r) for r in [header] + rows) + "\n" + summary + "\n")
    for line in experiments:
        print("experiment:", line[:600])
    print(table_text)
    print(summary)
    sys.exit(0 if passed == len(rows) else 1)


if __name__ == "__main__":
    main()
