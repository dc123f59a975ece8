#!/usr/bin/env bash
# Probe, on the GPU machine from the repository root: why replay_checks graph_nodes (a graph
# with memset, kernels, a child graph, a D2H copy and a host node) ends with SIGSEGV when run
# whole under kreplay (KREPLAY_GRAPH_NODES=0). Prints the backtrace and which variants crash
# (replay_checks prints its RESULT line unbuffered: a RESULT with rc -11 means a crash at exit).
# Usage: bench/probes/graph_whole_crash.sh [bin dir]   (logs under $OUT)
set -u
BIN="${1:-target/release}"
OUT="${OUT:-/tmp/graph_whole}"
mkdir -p "$OUT"
W="$(mktemp -d)"
nvcc -O2 -std=c++17 -arch=sm_90 -o "$W/checks" tests/gpu/replay_checks.cu || exit 1
G="--pmc sm__warps_launched.sum smsp__inst_executed.sum --pmc sm__warps_launched.sum dram__bytes_read.sum"
variant() {  # name env... -- kreplay args
    local name="$1"; shift
    env "$@" timeout 60 "$BIN/kreplay" $G --replay-mode kernel --kernel-replay-beta-enabled -d "$W/$name" -o out -- "$W/checks" graph_nodes >"$OUT/$name.log" 2>&1
    echo "== $name: rc $? $(grep -h RESULT "$OUT/$name.log")"
}
variant nodes_on KREPLAY_PACK_GROUPS=0
variant whole KREPLAY_PACK_GROUPS=0 KREPLAY_GRAPH_NODES=0
variant whole_packed KREPLAY_GRAPH_NODES=0
variant whole_no_spans KREPLAY_GRAPH_NODES=0 KREPLAY_WINDOW_SPANS=0
# The crash's backtrace, from a SIGSEGV handler preloaded into the application (no gdb there).
gcc -shared -fPIC -O1 -o "$W/segv.so" bench/probes/segv_backtrace.c || exit 1
LD_PRELOAD="$W/segv.so" KREPLAY_GRAPH_NODES=0 KREPLAY_PACK_GROUPS=0 KREPLAY_DEBUG=1 timeout 60 "$BIN/kreplay" $G \
    --replay-mode kernel --kernel-replay-beta-enabled -d "$W/bt" -o out -- "$W/checks" graph_nodes >"$OUT/bt.log" 2>&1
grep -B30 -A40 "=== SIGNAL" "$OUT/bt.log" | head -120
