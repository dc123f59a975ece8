"""Section `memory`: --memory-copy-trace and --memory-allocation-trace on an asyncAPI /
simpleStreams-like program (tests/gpu/memory_traffic.cu: synchronous, asynchronous, unified and
2-D copies on two streams; device, pitched, managed, pinned host and pool memory), through the
real CLI: its results unchanged, every copy recorded once with its direction (the tool's own
snapshot copies and the replayed passes not among them: a kernel-replay run with
`--replay-window auto` records the same rows as the options alone), every allocation the program
printed recorded with its address and size, each freed, and rocprofv3's CSV columns."""
import csv
import os
import re

from harness import GROUPS, KREPLAY, WORK, query, row, run

PROGRAM = os.path.join(WORK, "memory_traffic")
TRACES = ["--memory-copy-trace", "--memory-allocation-trace"]
COPY_COLUMNS = ["Kind", "Direction", "Stream_Id", "Source_Agent_Id", "Destination_Agent_Id",
                "Correlation_Id", "Start_Timestamp", "End_Timestamp"]
ALLOCATION_COLUMNS = ["Kind", "Operation", "Agent_Id", "Allocation_Size", "Address", "Correlation_Id",
                      "Start_Timestamp", "End_Timestamp"]


def traced(tag, more):
    out_dir = os.path.join(WORK, tag)
    argv = [KREPLAY, *more, *TRACES, "-d", out_dir, "-o", "m", "-f", "rocpd", "csv", "--", PROGRAM]
    rc, out, err, _, _ = run(argv, None, tag=tag, timeout=300)
    return rc, out, err, out_dir


def rows_of(out_dir, name):
    path = os.path.join(out_dir, f"m_{name}.csv")
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []


def untimed(rows):
    """A trace's rows without what differs between two runs of the same program: times,
    correlation ids (the calls the tool makes under kernel replay take ids too) and addresses
    (each process maps memory elsewhere; each run's own are checked against what it printed)."""
    return [{k: v for k, v in r.items() if not k.endswith("_Timestamp") and k not in ("Correlation_Id", "Address")}
            for r in rows]


def printed_allocations_traced(out, out_dir):
    """The allocations the program printed (kind, address, size) missing from its allocation trace."""
    traced = {(int(r["Address"], 0), int(r["Allocation_Size"])) for r in rows_of(out_dir, "memory_allocation_trace")
              if r["Operation"].endswith("ALLOCATE")}
    return [(k, a, s) for k, a, s in re.findall(r"ALLOC (\w+) (0x[0-9a-f]+) (\d+)", out)
            if (int(a, 16), int(s)) not in traced]


def memory_checks():
    name = "memory copies and allocations of an asyncAPI-like program"
    if not os.path.exists(PROGRAM):
        row(name, "built", "nvcc failed on tests/gpu/memory_traffic.cu (nvcc.log)", False)
        return
    rc, out, err, alone = traced("memory_alone", [])
    result = re.search(r"RESULT memory_traffic (\w+)", out)
    counts = re.search(r"COPIES h2d=(\d+) d2h=(\d+) d2d=(\d+)", out)
    row(f"{name}, traces alone", "PASS, exit 0", f"rc {rc}; {result.group(0) if result else err[-200:]!r}",
        rc == 0 and result and result.group(1) == "PASS")
    db = os.path.join(alone, "m_results.db")
    seen = dict(query(db, "SELECT name, COUNT(*) FROM memory_copies GROUP BY name"))
    expected = {}
    if counts:
        h2d, d2h, d2d = map(int, counts.groups())
        expected = {"MEMORY_COPY_HOST_TO_DEVICE": h2d, "MEMORY_COPY_DEVICE_TO_HOST": d2h,
                    "MEMORY_COPY_DEVICE_TO_DEVICE": d2d}
    row("every copy once, by direction (rocpd memory_copies)", f"{expected}", f"{seen}",
        bool(expected) and seen == expected)
    printed = re.findall(r"ALLOC (\w+) (0x[0-9a-f]+) (\d+)", out)
    allocations = query(db, "SELECT M.type, M.address, M.size, json_extract(R.extdata, '$.memory') FROM memory_allocations M "
                            "JOIN rocpd_memory_allocate R ON R.id = M.id")
    allocated = {(a, s, m) for t, a, s, m in allocations if t == "ALLOC"}
    freed = {a for t, a, _, _ in allocations if t == "FREE"}
    missing = [(k, a, s) for k, a, s in printed if (int(a, 16), int(s), k) not in allocated]
    unfreed = [(k, a) for k, a, _ in printed if int(a, 16) not in freed]
    row("every allocation with its kind, address and size, each freed", "5 allocations, none missing",
        f"{len(printed)} printed, {len(allocations)} rows; missing {missing}, not freed {unfreed}",
        len(printed) == 5 and not missing and not unfreed)
    copies, allocation_rows = rows_of(alone, "memory_copy_trace"), rows_of(alone, "memory_allocation_trace")
    row("memory_copy_trace.csv and memory_allocation_trace.csv", "rocprofv3's columns, a row per record",
        f"{len(copies)} and {len(allocation_rows)} rows; columns {list(copies[0]) if copies else None}",
        copies and allocation_rows and list(copies[0]) == COPY_COLUMNS
        and list(allocation_rows[0]) == ALLOCATION_COLUMNS
        and len(copies) == sum(seen.values()) and len(allocation_rows) == len(allocations))
    replay = [*sum((["--pmc", *g] for g in GROUPS[:2]), []), "--replay-mode", "kernel",
              "--kernel-replay-beta-enabled", "--replay-window", "auto"]
    rc, out, err, replayed = traced("memory_replay", replay)
    result = re.search(r"RESULT memory_traffic (\w+)", out)
    differ = {f: [(a, b) for a, b in zip(untimed(rows_of(replayed, f)), untimed(rows_of(alone, f))) if a != b][:2]
              + ([] if len(rows_of(replayed, f)) == len(rows_of(alone, f))
                 else [("rows", len(rows_of(replayed, f)), len(rows_of(alone, f)))])
              for f in ("memory_copy_trace", "memory_allocation_trace")}
    missing = printed_allocations_traced(out, replayed)
    row("the same under kernel replay (2 groups, --replay-window auto)",
        "PASS; the same copies and allocations as the traces alone (none of the tool's), at this run's addresses",
        f"rc {rc}; {result.group(0) if result else err[-200:]!r}; differing {differ}; printed but not traced {missing}",
        rc == 0 and result and result.group(1) == "PASS" and not any(differ.values()) and not missing)
