#!/usr/bin/env bash
# Probe, on the GPU machine from the repository root: which driver calls the bench workloads
# make between their kernels (what a replay window must stay open across), and whether each
# workload's output is deterministic alone. Runs every workload twice alone and once under
# kreplay with one hardware pass and KREPLAY_WINDOW_SPANS=0, so that every call closes a window
# and the end-of-run line "replay windows closed by: ..." counts them by name.
# Usage: bench/probes/call_census.sh [target/release]   (logs under $OUT)
set -u
BIN="${1:-target/release}"
OUT="${OUT:-/tmp/census}"
mkdir -p "$OUT"
W="$(mktemp -d)"
nvcc -O2 -arch=sm_90 -o "$W/syncloop" bench/workloads/syncloop.cu || exit 1
nvcc -O2 -arch=sm_90 -o "$W/solver" bench/workloads/solver.cu -lcublas || exit 1
run() {  # name argv...
    local name="$1"; shift
    timeout 120 "$@" >"$OUT/$name.alone1" 2>&1
    timeout 120 "$@" >"$OUT/$name.alone2" 2>&1
    local same=differ
    cmp -s <(grep -v 'dispatch_ms\|app_s' "$OUT/$name.alone1") <(grep -v 'dispatch_ms\|app_s' "$OUT/$name.alone2") && same=same
    local t0=$(date +%s%N)
    KREPLAY_WINDOW_SPANS=0 timeout 300 "$BIN/kreplay" --pmc sm__warps_launched.sum --pmc smsp__inst_executed.sum \
        --replay-mode kernel --kernel-replay-beta-enabled -d "$W/out_$name" -o out -- "$@" >"$OUT/$name.kreplay" 2>&1
    local rc=$? t1=$(date +%s%N)
    local prof=differ
    cmp -s <(grep -v 'dispatch_ms\|app_s\|^kreplay' "$OUT/$name.alone1") <(grep -v 'dispatch_ms\|app_s\|^kreplay' "$OUT/$name.kreplay") && prof=same
    echo "== $name: alone twice $same; kreplay rc $rc, $(( (t1 - t0) / 1000000 )) ms, output vs alone $prof"
    grep -h 'windows closed by\|dispatches' "$OUT/$name.kreplay" | grep -v '^iteration' | cut -c1-1500
}
run syncloop "$W/syncloop" 70
run solver "$W/solver" 30
run resnet python3 -u bench/workloads/resnet.py 1
run gpt2 python3 -u bench/workloads/gpt2.py 1
run mlp python3 -u bench/workloads/mlp.py 1
