"""Section `graphs`: CUDA graph launches run node by node (captured graphs, graph-API graphs,
PyTorch's torch.cuda.graph, NVIDIA's graph samples), with windows and without node replay."""
import os
import re
import sys

from harness import (CHECKS, GROUPS, UNPACKED, WORK, app_lines, counters, experiments, ncu_program,
                     passes_per_dispatch, query, result_line, row, run, warnings)


def graph_declines(db):
    """The warnings that say a graph ran whole, unmeasured (a decline, or graph nodes off)."""
    # ", runs whole: why" / "runs whole, once per launch" / "run whole, unmeasured", the engine's
    # "a graph launch that runs whole is neither replayed nor measured" (older databases: "graph
    # launches are not replayed"); the capture notice's "(… unless a warning says it runs whole)"
    # is not a decline.
    return [w for w in warnings(db) if re.search(r"\bruns? whole[,:]", w)
            or "graph launch that runs whole" in w or "graph launches are not replayed" in w]


def graph_checks():
    """CUDA graph launches run node by node: results, passes per kernel node, counters == ncu."""
    # --- graphs: run node by node, every kernel node a dispatch measured in every pass ----------
    rc, out, err, db, wall = run([CHECKS, "graph"], GROUPS[:2], tag="graph2", env_extra=UNPACKED)
    status, details = result_line(out, "graph")
    passes = [c for _, c, _ in passes_per_dispatch(db)]
    names = sorted({n.split("(")[0] for (n,) in query(db, "SELECT DISTINCT kernel_name FROM counters_collection")})
    cupti_errors = [l for l in err.splitlines() if "CUPTI" in l and "failed" in l]
    declined = graph_declines(db)
    row("graph 2 groups (captured, 2 kernel nodes, launched twice, then a kernel)",
        "results right; 5 dispatches, each in passes 0 and 1; no graph declined; no CUPTI error",
        f"{status} {details}; passes {passes}; kernels {names}; declined {declined[:1]}; CUPTI errors {cupti_errors[:1]}",
        rc == 0 and status == "PASS" and passes == [2] * 5 and names == ["add_one"] and not declined and not cupti_errors)
    rc, out, err, db, wall = run([CHECKS, "graph_nodes"], GROUPS[:2], tag="graph_nodes2", env_extra=UNPACKED)
    status, details = result_line(out, "graph_nodes")
    passes = [c for _, c, _ in passes_per_dispatch(db)]
    table = counters(db)
    order = [table[k]["kernel"] for k in sorted(table) if k[1] == 0]
    expected_order = ["add_one", "add_one", "scale_inplace"] * 3
    ours = [table[k]["values"] for k in sorted(table) if k[1] == 0]
    theirs = ncu_program([CHECKS, "graph_nodes"], options=("--graph-profiling", "node"))
    det = ("sm__warps_launched.sum", "smsp__inst_executed.sum")
    row("graph nodes 2 groups (graph API: memset, kernels, child graph, D2H copy, host node; 3 launches)",
        "results right, host node ran 3 times; 9 dispatches in kernel-node order, each in passes 0 and 1; no CUPTI error",
        f"{status} {details}; passes {passes}; order {[o.split('(')[0] for o in order]}; {err.strip()[-120:]!r}",
        rc == 0 and status == "PASS" and passes == [2] * 9
        and [o.split("(")[0].split(" ")[-1] for o in order] == expected_order
        and not [l for l in err.splitlines() if "CUPTI" in l and "failed" in l])
    ours_det = [{m: v.get(m) for m in det} for v in ours]
    row("graph nodes: warps and instructions == ncu --graph-profiling node",
        "9 kernel nodes, each equal to Nsight Compute's",
        f"ncu {theirs[:3]}... ({len(theirs)}); kreplay {ours_det[:3]}... ({len(ours_det)})",
        len(theirs) == 9 and len(ours_det) == 9
        and all(theirs[i].get(m) is not None and theirs[i].get(m) == ours_det[i].get(m) for i in range(9) for m in det))
    # With windows as the CLI's default: the kernel nodes of all three launches share one window
    # (the empty stand-ins launch while it measures); with KREPLAY_GRAPH_WINDOW_SPANS=0 the window
    # closes at each graph launch.
    for spans, tag, expect in (("1", "graph_nodes_auto", "the three launches' nodes in one window"),
                               ("0", "graph_nodes_nospans", "windows closed by the 3 graph launches")):
        rc, out, err, db, wall = run([CHECKS, "graph_nodes"], GROUPS[:2], tag=tag, replay_window="auto",
                                     env_extra=UNPACKED | {"KREPLAY_GRAPH_WINDOW_SPANS": spans})
        status, details = result_line(out, "graph_nodes")
        passes = [c for _, c, _ in passes_per_dispatch(db)]
        windows = re.search(r"replay windows closed by: .*", err)
        shape = re.search(r"(\d+) dispatches in (\d+) windows", err)
        shape = (int(shape.group(1)), int(shape.group(2))) if shape else None
        by_launch = bool(windows) and "a graph launch 3" in windows.group(0)
        row(f"graph nodes 2 groups, windows auto, KREPLAY_GRAPH_WINDOW_SPANS={spans}",
            f"results right, host node ran 3 times; 9 dispatches in both passes; {expect}; no CUPTI error",
            f"{status} {details}; passes {passes}; {windows.group(0)[:140] if windows else 'no window line'}",
            rc == 0 and status == "PASS" and passes == [2] * 9
            and (shape == (9, 1) and not by_launch if spans == "1" else shape == (9, 3) and by_launch)
            and not [l for l in err.splitlines() if "CUPTI" in l and "failed" in l])
    rc, out, err, db, wall = run([CHECKS, "graph_nodes"], GROUPS[:2], tag="graph_whole", env_extra=UNPACKED | {"KREPLAY_GRAPH_NODES": "0"})
    status, details = result_line(out, "graph_nodes")
    warned = bool(graph_declines(db))
    measured = len(counters(db))
    row("graph nodes, KREPLAY_GRAPH_NODES=0", "results right; the graph runs whole, unmeasured (no counters), warned",
        f"rc {rc}; {status} {details}; warning {'present' if warned else 'absent'}; {measured} measured dispatch pass(es)",
        rc == 0 and status == "PASS" and warned and measured == 0)

    # A PyTorch training step captured into a CUDA graph (torch.cuda.graph) and replayed 4 times.
    losses = lambda text: re.findall(r"loss (\S+)", text)
    alone = losses(run([sys.executable, "tests/gpu/torch_graph.py"], None, tag="torch_graph_alone", timeout=300)[1])
    rc, out, err, db, wall = run([sys.executable, "tests/gpu/torch_graph.py"], GROUPS[:2], tag="torch_graph", timeout=300,
                                 env_extra=UNPACKED, replay_window="auto")
    passes = [c for _, c, _ in passes_per_dispatch(db)]
    declined = graph_declines(db)
    row("PyTorch step in a CUDA graph (torch.cuda.graph, 4 replays), 2 groups",
        "losses bit-identical to alone; every dispatch (the graph's kernel nodes too) in passes 0 and 1; no graph declined",
        f"{losses(out)} vs {alone}; {len(passes)} dispatches, passes {sorted(set(passes))}; declined {declined[:1]}; "
        f"{err.strip()[-100:]!r}",
        rc == 0 and bool(alone) and losses(out) == alone and bool(passes) and set(passes) == {2} and not declined)
    # NVIDIA's graph samples (tests/gpu/corpus, fetched into the working tree, never committed):
    # output identical to a run alone (timings left out), every kernel node in both passes.
    samples = [("simpleCudaGraphs", []), ("jacobiCudaGraphs", ["-gpumethod=0"]), ("jacobiCudaGraphs", ["-gpumethod=1"])]
    for name, args in samples:
        program = os.path.join(WORK, name)
        label = " ".join([name, *args])
        if not os.path.exists(program):
            experiments.append(f"{label} not run: tests/gpu/corpus/cuda-samples is not in the working tree")
            continue
        untimed = lambda text: [l for l in app_lines(text) if "time" not in l.lower()]
        alone = untimed(run([program, *args], None, tag=f"alone_{name}", timeout=120)[1])
        # Windows as the CLI's default (`auto`): graph launches share windows across the
        # program's synchronisations and parameter changes.
        rc, out, err, db, wall = run([program, *args], GROUPS[:2], tag=f"graph_{name}", timeout=150, env_extra=UNPACKED,
                                     replay_window="auto")
        passes = [c for _, c, _ in passes_per_dispatch(db)]
        declined = graph_declines(db)
        same = untimed(out) == alone and bool(alone)
        windows = re.search(r"replay windows closed by: .*", err)
        row(f"NVIDIA {label}, 2 groups, windows auto", "output as alone; every kernel node in passes 0 and 1; no graph declined",
            f"rc {rc}, {wall:.0f}s; output {'same' if same else 'differs'}; {len(passes)} dispatches, "
            f"{windows.group(0)[:160] if windows else 'no window line'}; "
            f"passes {sorted(set(passes))}; declined {declined[:1]}; {err.strip()[-100:]!r}",
            rc == 0 and same and bool(passes) and set(passes) == {2} and not declined)
