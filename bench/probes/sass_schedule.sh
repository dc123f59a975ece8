#!/usr/bin/env bash
# Probe, on the GPU machine from the repository root: does a schedule holding SASS metrics run
# every pass's kernel instrumented? Runs cuBLAS SGEMM 4096 x10 under kreplay with the bench's
# headline groups, with the headline minus the SASS group, and with the SASS group alone, and
# prints per counter the median kernel time of the execution that measured it (each group's
# records carry the start/end of its own execution) and the run's wall time.
# Usage: bench/probes/sass_schedule.sh [bin dir]   (logs under $OUT)
set -u
BIN="${1:-target/release}"
OUT="${OUT:-/tmp/sass}"
mkdir -p "$OUT"
W="$(mktemp -d)"
nvcc -O2 -arch=sm_90 -o "$W/gemm" bench/workloads/gemm.cu -lcublas || exit 1
G0="--pmc sm__warps_launched.sum smsp__inst_executed.sum"
G1="--pmc smsp__sass_inst_executed_op_shared_ld.sum smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
G2="--pmc l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum dram__sectors_read.sum lts__t_sectors_op_read.sum"
G3="--pmc l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum lts__t_sectors_op_write.sum"
run() {  # name env pmc...
    local name="$1" envs="$2"; shift 2
    local t0=$(date +%s%N)
    env $envs timeout 300 "$BIN/kreplay" "$@" --replay-mode kernel --kernel-replay-beta-enabled \
        -d "$W/$name" -o out --output-format csv -- "$W/gemm" 10 4096 >"$OUT/$name.log" 2>&1
    local rc=$? t1=$(date +%s%N)
    echo "== $name: rc $rc, wall $(( (t1 - t0) / 1000000 )) ms"
    python3 - "$W/$name" <<'PY'
import csv, glob, statistics, sys
rows = list(csv.DictReader(open(glob.glob(sys.argv[1] + "/**/out_counter_collection.csv", recursive=True)[0])))
by = {}
for r in rows:
    by.setdefault(r["Counter_Name"], []).append((int(r["End_Timestamp"]) - int(r["Start_Timestamp"])) / 1e6)
for name, ts in by.items():
    print(f"   {name:60s} n={len(ts):3d} median kernel {statistics.median(ts):8.2f} ms")
PY
    grep -h 'kreplay: .*execution\|kreplay: .*window' "$OUT/$name.log" | cut -c1-300
}
timeout 30 "$W/gemm" 10 4096 | tail -2
run headline "" $G0 $G1 $G2 $G3
run no_sass "" $G0 $G2 $G3
run sass_only "" $G1
run g0_only "" $G0
run headline_w1 "" $G0 $G1 $G2 $G3 --replay-window 1
