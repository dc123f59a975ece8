"""Section `api`: -r/--runtime-trace and -s/--sys-trace on the NVTX-marked PyTorch training loop
(tests/gpu/torch_nvtx.py), through the real CLI: the losses equal a run without kreplay; the CUDA
runtime and driver calls land in rocpd's regions and cuda_api_trace.csv; every dispatch shares the
correlation id of the call that launched it; every driver call under -s made inside a runtime call
names one; launches and allocations carry their arguments in region_args; the same calls with
kernel replay (2 groups) as with the kernel trace alone, so none of the tool's own (snapshots,
restores, replayed passes, the L2 flush) is recorded."""
import collections
import csv
import os
import re
import sys

from harness import CHECKS, GROUPS, KREPLAY, WORK, counters, ncu_reference, query, row, run

COLUMNS = ["Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"]


def traced(options, tag, replay):
    script = [sys.executable, "tests/gpu/torch_nvtx.py"]
    out_dir = os.path.join(WORK, tag)
    counters = sum((["--pmc", *g] for g in GROUPS[:2]), []) + [
        "--replay-mode", "kernel", "--kernel-replay-beta-enabled"] if replay else []
    argv = [KREPLAY, *counters, *options, "-d", out_dir, "-o", "a", "-f", "rocpd", "csv", "--", *script]
    rc, out, err, _, _ = run(argv, None, tag=tag, timeout=580)
    return rc, re.findall(r"loss (\S+)", out), os.path.join(out_dir, "a_results.db"), out_dir, err


def api_checks():
    script = [sys.executable, "tests/gpu/torch_nvtx.py"]
    _, alone, _, _, _ = run(script, None, tag="api_plain", timeout=300)
    reference = re.findall(r"loss (\S+)", alone)
    rc, losses, db, out_dir, err = traced(["-s"], "api_sys", replay=True)
    row("PyTorch loop under -s/--sys-trace, 2 groups in kernel replay", "losses equal the run alone",
        f"rc {rc}; {losses} vs {reference}; {err[-200:]!r}", rc == 0 and losses and losses == reference)
    counts = dict(query(db, "SELECT category, COUNT(*) FROM regions WHERE category LIKE 'CUDA%' GROUP BY category"))
    # Every driver call -s records under a runtime call is one the runtime made for it, so there are
    # at least as many driver calls as runtime calls that reach the driver: a launch at least.
    runtime_launches = query(db, "SELECT COUNT(*) FROM regions WHERE category = 'CUDA_RUNTIME_API' AND name LIKE 'cudaLaunch%'")
    row("CUDA API calls in rocpd's regions", "runtime and driver calls; every runtime launch has a driver call beneath it",
        f"{counts}; {runtime_launches} runtime launches",
        counts.get("CUDA_RUNTIME_API", 0) > 0 and runtime_launches and runtime_launches[0][0] > 0
        and counts.get("CUDA_DRIVER_API", 0) >= runtime_launches[0][0])
    # CUPTI gives the driver calls a runtime call makes its correlation id: a dispatch's id names
    # its launch and the driver calls made inside the runtime launch (a module's first launch
    # asks for the context, say), never a call of its own elsewhere.
    unlinked = query(db, "SELECT COUNT(*), (SELECT COUNT(*) FROM kernels) FROM kernels K WHERE NOT EXISTS "
                         "(SELECT 1 FROM regions R WHERE R.category LIKE 'CUDA%' AND R.corr_id = K.correlation_id "
                         "AND R.name LIKE '%Launch%')")
    launchers = query(db, "SELECT R.name, COUNT(*) FROM kernels K JOIN regions R ON R.corr_id = K.correlation_id "
                          "AND R.category LIKE 'CUDA%' GROUP BY R.name")
    strangers = query(db, "SELECT R.name, R.category, R.parent_stack_id, R.corr_id FROM kernels K JOIN regions R "
                          "ON R.corr_id = K.correlation_id AND R.category LIKE 'CUDA%' WHERE R.name NOT LIKE '%Launch%' "
                          "AND NOT (R.category = 'CUDA_DRIVER_API' AND R.parent_stack_id = R.corr_id)")
    row("every dispatch shares its launch call's correlation id",
        "0 dispatches without a launch call; other calls sharing it only driver calls inside the runtime launch",
        f"{unlinked}; calls sharing it {launchers}; others {strangers[:3]}",
        unlinked and unlinked[0][0] == 0 and unlinked[0][1] > 0 and not strangers)
    orphans = query(db, "SELECT COUNT(*) FROM regions D WHERE D.category = 'CUDA_DRIVER_API' AND D.parent_stack_id != 0 "
                        "AND NOT EXISTS (SELECT 1 FROM regions R WHERE R.category = 'CUDA_RUNTIME_API' "
                        "AND R.corr_id = D.parent_stack_id)")
    row("driver calls made inside runtime calls name them", "0 orphans", f"{orphans}", orphans == [(0,)])
    # The arguments decoded from CUPTI's parameter blocks (docs/output.md, "Arguments"): a runtime
    # launch's gridDim and blockDim are its dispatch's, an allocation names the address it returned.
    launches = query(db, "SELECT COUNT(*), SUM(G.value = printf('{z=%d, y=%d, x=%d}', K.grid_size_z / K.workgroup_z, "
                         "K.grid_size_y / K.workgroup_y, K.grid_size_x / K.workgroup_x) AND B.value = printf("
                         "'{z=%d, y=%d, x=%d}', K.workgroup_z, K.workgroup_y, K.workgroup_x)) FROM kernels K "
                         "JOIN regions R ON R.corr_id = K.correlation_id AND R.category = 'CUDA_RUNTIME_API' "
                         "AND R.name LIKE 'cudaLaunchKernel%' "
                         "JOIN region_args G ON G.id = R.id AND G.guid = R.guid AND G.name = 'gridDim' "
                         "JOIN region_args B ON B.id = R.id AND B.guid = R.guid AND B.name = 'blockDim'")
    allocations = query(db, "SELECT COUNT(*), SUM(A.value != '0') FROM regions R JOIN region_args A ON A.id = R.id "
                            "AND A.guid = R.guid WHERE R.name LIKE 'cudaMalloc%' AND A.name = 'devPtr'")
    # Every runtime launch of a dispatch and every cudaMalloc has them (not only those found).
    all_launches = query(db, "SELECT COUNT(*) FROM kernels K JOIN regions R ON R.corr_id = K.correlation_id "
                             "AND R.category = 'CUDA_RUNTIME_API' AND R.name LIKE 'cudaLaunchKernel%'")
    all_mallocs = query(db, "SELECT COUNT(*) FROM regions WHERE name LIKE 'cudaMalloc%'")
    # The launch calls without a gridDim argument, by name (what the decoding misses).
    bare = query(db, "SELECT R.name, COUNT(*) FROM kernels K JOIN regions R ON R.corr_id = K.correlation_id "
                     "AND R.category = 'CUDA_RUNTIME_API' AND R.name LIKE 'cudaLaunchKernel%' WHERE NOT EXISTS "
                     "(SELECT 1 FROM region_args G WHERE G.id = R.id AND G.guid = R.guid AND G.name = 'gridDim') "
                     "GROUP BY R.name")
    row("API arguments in rocpd's region_args (-s)",
        "every runtime launch's gridDim/blockDim its dispatch's; every cudaMalloc's devPtr non-NULL",
        f"launches (with args, matching) {launches} of {all_launches}; cudaMalloc (with devPtr, non-NULL) "
        f"{allocations} of {all_mallocs}; without gridDim {bare}",
        launches and launches[0][0] > 0 and launches[0][0] == launches[0][1] == all_launches[0][0]
        and allocations and allocations[0][0] > 0 and allocations[0][0] == allocations[0][1] == all_mallocs[0][0])
    path = os.path.join(out_dir, "a_cuda_api_trace.csv")
    rows = list(csv.DictReader(open(path))) if os.path.exists(path) else []
    row("cuda_api_trace.csv", "hip_api_trace.csv's columns, a row per call",
        f"{len(rows)} rows, columns {list(rows[0]) if rows else None}",
        rows and list(rows[0]) == COLUMNS and len(rows) == sum(counts.values()))
    rc2, _, db2, _, err2 = traced(["-s"], "api_sys_alone", replay=False)
    calls = lambda d: collections.Counter(n for (n,) in query(d, "SELECT name FROM regions WHERE category LIKE 'CUDA%'"))
    replayed, traced_alone = calls(db), calls(db2)
    differ = {n: (replayed[n], traced_alone[n]) for n in replayed | traced_alone if replayed[n] != traced_alone[n]}
    row("the same calls with kernel replay as with the kernel trace alone", "no function's count differs",
        f"rc {rc2}; differing {dict(list(differ.items())[:8])}; {err2[-200:]!r}", rc2 == 0 and not differ)
    rc3, _, db3, _, _ = traced(["-r"], "api_runtime", replay=True)
    domains = query(db3, "SELECT DISTINCT category FROM regions WHERE category LIKE 'CUDA%'")
    # -r records driver calls only where the application makes them itself: none under a runtime call.
    nested = query(db3, "SELECT COUNT(*) FROM regions WHERE category = 'CUDA_DRIVER_API' AND parent_stack_id != 0")
    row("-r/--runtime-trace", "the application's own calls: runtime calls (PyTorch makes no driver call of its own"
        " outside one, cuBLAS/Triton may)", f"rc {rc3}; categories {domains}; driver calls under a runtime call {nested}",
        rc3 == 0 and ("CUDA_RUNTIME_API",) in domains and nested == [(0,)])
    everything_on_check()


def everything_on_check():
    """Tracing must not change what counters measure: the deterministic counters of the in-place
    kernel with every domain on (-s) and 2 groups in kernel replay equal Nsight Compute's."""
    out_dir = os.path.join(WORK, "api_everything")
    argv = [KREPLAY, *sum((["--pmc", *g] for g in GROUPS[:2]), []), "--replay-mode", "kernel",
            "--kernel-replay-beta-enabled", "-s", "-d", out_dir, "-o", "e", "-f", "rocpd", "--", CHECKS, "inplace"]
    rc, _, err, _, _ = run(argv, None, tag="api_everything", timeout=300)
    metrics = ("sm__warps_launched.sum", "smsp__inst_executed.sum")
    per_dispatch = {}
    for (d, _), e in sorted(counters(os.path.join(out_dir, "e_results.db")).items()):
        for m in metrics:
            if m in e["values"]:
                per_dispatch.setdefault(d, {}).setdefault(m, e["values"][m])
    ours = [per_dispatch[d] for d in sorted(per_dispatch)]
    theirs = ncu_reference()
    row("deterministic counters with -s (every domain) on == ncu", f"ncu: {theirs[:1]} x{len(theirs)}",
        f"rc {rc}; kreplay: {ours[:1]} x{len(ours)}; {err[-200:]!r}",
        rc == 0 and bool(theirs) and len(ours) == len(theirs)
        and all(abs(a.get(m, -1) - b.get(m, -2)) < 0.5 for a, b in zip(ours, theirs) for m in metrics))
