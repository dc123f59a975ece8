"""Section `multigpu`: one process driving two GPUs, and DDP on 2 GPUs (NCCL) under torchrun. Needs
2 GPUs (nvidia-h200-x2); with fewer it is reported as not run."""
import os
import re
import subprocess
import sys

from harness import (HEADLINE, KREPLAY, TWO_DEVICES, WORK, counters, experiments, ncu_program, passes_per_dispatch,
                     query, result_line, row, run)


def gpu_count():
    p = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True)
    return len([l for l in p.stdout.splitlines() if l.strip()]) if p.returncode == 0 else 0


def two_device_checks():
    """One process driving two GPUs (tests/gpu/two_devices.cu), one thread switching devices and a
    thread per device, under kernel replay with the headline groups and `--replay-window auto`:
    results as one execution, every dispatch in every pass on its own device, deterministic
    counters == ncu's; with a thread per device each device keeps its own window open while the
    other replays (3 windows for the 25 launches, one per device until the peer copy and then the
    last launch's, when no thread's cudaSetDevice meets the other's open window: at most 5)."""
    for mode in ("alternate", "threads"):
        name = f"two GPUs in one process ({mode}), 4 groups in 3 hardware passes"
        if not os.path.exists(TWO_DEVICES):
            row(name, "built", "nvcc failed on tests/gpu/two_devices.cu (nvcc.log)", False)
            return
        out_dir = os.path.join(WORK, f"two_{mode}")
        argv = [KREPLAY, *sum((["--pmc", *g] for g in HEADLINE), []), "--replay-mode", "kernel",
                "--kernel-replay-beta-enabled", "--replay-window", "auto", "-d", out_dir, "-o", "two",
                "--", TWO_DEVICES, mode]
        rc, out, err, _, wall = run(argv, None, tag=f"two_{mode}")
        status, details = result_line(out, "two_devices")
        db = os.path.join(out_dir, "two_results.db")
        passes = [c for _, c, _ in passes_per_dispatch(db)]
        agents = query(db, "SELECT COUNT(DISTINCT agent_id) FROM rocpd_kernel_dispatch")
        windows = re.search(r"(\d+) dispatches in (\d+) windows", err)
        table = counters(db)
        ours = sorted((e["values"]["sm__warps_launched.sum"], e["values"]["smsp__inst_executed.sum"])
                      for e in table.values() if "sm__warps_launched.sum" in e["values"])
        theirs = sorted((v.get("sm__warps_launched.sum"), v.get("smsp__inst_executed.sum"))
                        for v in ncu_program([TWO_DEVICES, mode], metrics=tuple(HEADLINE[0])))
        windows_ok = mode != "threads" or (windows is not None and 3 <= int(windows.group(2)) <= 5)
        row(name, "results right; 25 dispatches x 4 passes on 2 agents; warps/inst == ncu"
            + ("; 3-5 windows" if mode == "threads" else ""),
            f"rc {rc}; {status} {details}; passes {sorted(set(passes))} x{len(passes)}; agents {agents}; "
            f"windows {windows.group(0) if windows else None}; == ncu {ours == theirs} ({ours[:1]} vs {theirs[:1]}); {wall:.1f}s",
            rc == 0 and status == "PASS" and passes == [len(HEADLINE)] * 25 and agents == [(2,)]
            and ours == theirs and len(ours) == 25 and windows_ok)


def multi_gpu_check():
    """DDP on 2 GPUs (NCCL) under torchrun, both ranks profiled with the headline groups (three
    hardware passes on GH100): each rank's losses identical to a run without kreplay, NCCL's
    kernels run once (declined_collective), the others replayed, one set of outputs per rank
    (-o ddp_%rank%). Needs 2 GPUs (nvidia-h200-x2); with fewer it is reported as not run."""
    gpus = gpu_count()
    if gpus < 2:
        experiments.append(f"multi-GPU checks (DDP, two GPUs in one process) not run: {gpus} GPU(s) here, they need 2 (nvidia-h200-x2)")
        return
    two_device_checks()
    env = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "tests/gpu/ddp_train.py"]
    losses = lambda out: sorted(l for l in out.splitlines() if l.startswith("rank "))
    rc0, out0, err0, _, _ = run(torchrun, None, tag="ddp_alone", timeout=300, env_extra=env)
    out_dir = os.path.join(WORK, "ddp")
    argv = [KREPLAY, *sum((["--pmc", *g] for g in HEADLINE), []), "--replay-mode", "kernel",
            "--kernel-replay-beta-enabled", "-d", out_dir, "-o", "ddp_%rank%", "--", *torchrun]
    rc, out, err, _, wall = run(argv, None, tag="ddp_replay", timeout=500, env_extra=env)
    dbs = {r: os.path.join(out_dir, f"ddp_{r}_results.db") for r in (0, 1)}
    outcomes = {r: dict(query(db, "SELECT outcome, COUNT(*) FROM kreplay_replay_cost GROUP BY outcome")) for r, db in dbs.items()}
    nccl_replayed = {r: query(db, "SELECT COUNT(*) FROM kernels K JOIN kreplay_replay_cost C ON C.dispatch_id = K.dispatch_id "
                                  "WHERE K.name LIKE '%nccl%Kernel%' AND C.outcome = 'replayed'") for r, db in dbs.items()}
    same = rc0 == 0 and len(losses(out0)) == 6 and losses(out) == losses(out0)
    ok = (rc == 0 and same and all(os.path.exists(db) for db in dbs.values())
          and all(o.get("declined_collective", 0) > 0 and o.get("replayed", 0) > 0 for o in outcomes.values())
          and all(n == [(0,)] for n in nccl_replayed.values()))
    row("DDP on 2 GPUs (NCCL), 4 groups in 3 hardware passes", "losses == alone per rank, NCCL kernels run once, others replayed, ddp_0 and ddp_1 outputs",
        f"rc {rc0}/{rc}; losses same {same} ({len(losses(out))} lines); outcomes {outcomes}; NCCL replayed {nccl_replayed}; {wall:.0f}s; {err.strip()[-160:]!r}", ok)
