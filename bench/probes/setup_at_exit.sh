#!/usr/bin/env bash
# Probe, on the GPU machine from the repository root: runs that end before the counter set-up
# begun at context creation is taken (every kernel filtered out; graph launches run whole) must
# exit 0, with a backtrace when they do not (a SIGSEGV handler preloaded); and a stream capture
# that begins while the set-up runs (bench/workloads/graphloop.cu) must not be invalidated.
# Usage: bench/probes/setup_at_exit.sh [bin dir]   (logs under $OUT)
#   N=30 ONLY=filtered bench/probes/setup_at_exit.sh .gpu-bin: the filtered run 30 times (an
#   intermittent SIGSEGV at exit, seen 2026-12-02 in tests/gpu/run.sh core), rc counts last.
BIN="${1:-target/release}"
OUT="${OUT:-/tmp/setup_at_exit}"; mkdir -p "$OUT"
W=$(mktemp -d)
nvcc -O2 -std=c++17 -arch=sm_90 -o "$W/checks" tests/gpu/replay_checks.cu || exit 1
nvcc -O2 -std=c++17 -arch=sm_90 -o "$W/graphloop" bench/workloads/graphloop.cu || exit 1
gcc -shared -fPIC -O1 -o "$W/segv.so" bench/probes/segv_backtrace.c 2>/dev/null || exit 1
gcc -shared -fPIC -O1 -o "$W/atexit.so" bench/probes/atexit_log.c -ldl 2>/dev/null || exit 1
G="--pmc sm__warps_launched.sum smsp__inst_executed.sum --pmc sm__warps_launched.sum dram__bytes_read.sum --replay-mode kernel --kernel-replay-beta-enabled"
show() { grep -h "RESULT\|signal\|context destroyed\|exit handler\|records flushed\|waited\|capture\|SIGNAL\|hardware pass\|replay: \|failed" -A0 "$1" | head -12; grep -h -A30 "=== SIGNAL" "$1" | head -40; }
probe() {  # name env... -- args
    local name="$1"; shift
    env LD_PRELOAD="${PRELOAD:-$W/segv.so}" KREPLAY_DEBUG=1 "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "== $name rc $rc"
    # With QUIET_OK=1 a run that exits 0 shows nothing more.
    if [ "$rc" != 0 ] || [ -z "${QUIET_OK:-}" ]; then show "$OUT/$name.log"; fi
}
for i in $(seq 1 "${N:-1}"); do
    QUIET_OK=$([ "${N:-1}" -gt 1 ] && echo 1) probe "filtered$i" timeout 40 "$BIN/kreplay" $G \
        --kernel-include-regex '^no_such$' -d "$W/f$i" -o out -- "$W/checks" inplace | tee -a "$OUT/filtered_rcs.txt"
done
echo "filtered runs by rc: $(grep -o 'rc [0-9-]*$' "$OUT/filtered_rcs.txt" | sort | uniq -c | tr '\n' ' ')"
[ "${ONLY:-}" = filtered ] && exit 0
probe whole KREPLAY_GRAPH_NODES=0 timeout 40 "$BIN/kreplay" $G -d "$W/g" -o out -- "$W/checks" graph_nodes
for i in 1 2; do
    probe "graphloop$i" timeout 60 "$BIN/kreplay" $G --replay-window auto -d "$W/l$i" -o out -- "$W/graphloop" 10
done
probe graphloop_late KREPLAY_EARLY_SETUP=0 timeout 60 "$BIN/kreplay" $G --replay-window auto -d "$W/ll" -o out -- "$W/graphloop" 10
# Who registers exit handlers, on which thread and when, around kreplay's phases (the set-up
# thread's registrations after "context created" are what must run after wait_at_exit).
PRELOAD="$W/segv.so:$W/atexit.so" probe filtered_atexit timeout 40 "$BIN/kreplay" $G --kernel-include-regex '^no_such$' \
    -d "$W/fa" -o out -- "$W/checks" inplace
grep -h "ATEXIT\|kreplay\[debug\]: \(injection ready\|context created\|exit handler\|records flushed\)\|profiler set up" \
    "$OUT/filtered_atexit.log" | grep -v "from /usr/bin\|from /bin" | cut -c1-200 | head -60
