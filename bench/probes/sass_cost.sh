#!/usr/bin/env bash
# Probe, on the GPU machine from the repository root: what the instrumented SASS pass costs per
# cuBLAS SGEMM 4096 for Nsight Compute and for kreplay. Wall of alone, of `ncu` and of `kreplay`
# with the SASS group only and with the bench's headline groups, at 10 and 30 GEMMs; the
# marginal cost per GEMM is (wall(30) - wall(10)) / 20, which no fixed cost enters.
# Usage: bench/probes/sass_cost.sh [bin dir]   (logs under $OUT)
set -u
BIN="${1:-target/release}"
OUT="${OUT:-/tmp/sass_cost}"
mkdir -p "$OUT"
W="$(mktemp -d)"
nvcc -O2 -arch=sm_90 -o "$W/gemm" bench/workloads/gemm.cu -lcublas || exit 1
SASS="smsp__sass_inst_executed_op_shared_ld.sum smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
REST="sm__warps_launched.sum smsp__inst_executed.sum l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum dram__sectors_read.sum lts__t_sectors_op_read.sum l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum lts__t_sectors_op_write.sum"
G_ALL="--pmc sm__warps_launched.sum smsp__inst_executed.sum --pmc $SASS --pmc l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum dram__sectors_read.sum lts__t_sectors_op_read.sum --pmc l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum lts__t_sectors_op_write.sum"
wall() {  # name cmd... ; prints and stores the wall in ms
    local name="$1"; shift
    local t0=$(date +%s%N)
    "$@" >"$OUT/$name.log" 2>&1
    local rc=$? t1=$(date +%s%N)
    local ms=$(( (t1 - t0) / 1000000 ))
    eval "W_$name=$ms"
    printf '%-22s rc %3d wall %7d ms\n' "$name" "$rc" "$ms"
}
ncu_run() { ncu --replay-mode kernel --cache-control all --clock-control none --metrics "$1" "$W/gemm" "$2" 4096; }
kr_run() { "$BIN/kreplay" $1 --replay-mode kernel --kernel-replay-beta-enabled -d "$W/k$RANDOM" -o out -- "$W/gemm" "$2" 4096; }
"$W/gemm" 10 4096 >/dev/null  # warm the disk cache and the driver once
for n in 10 30; do
    wall "alone_$n" "$W/gemm" $n 4096
    wall "ncu_sass_$n" ncu_run "${SASS// /,}" $n
    wall "ncu_all_$n" ncu_run "$(echo $SASS $REST | tr ' ' ',')" $n
    wall "kr_sass_$n" kr_run "--pmc $SASS" $n
    wall "kr_all_$n" kr_run "$G_ALL" $n
done
for t in alone ncu_sass ncu_all kr_sass kr_all; do
    a=$(eval echo \$W_${t}_10) b=$(eval echo \$W_${t}_30)
    echo "marginal per GEMM, $t: $(( (b - a) / 20 )) ms"
done
grep -h "hardware pass" "$OUT"/kr_*_10.log | cut -c1-160
