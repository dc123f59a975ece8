#!/usr/bin/env bash
# Which setting ends JAX's crash under kreplay with SASS metrics (docs/kernel-replay.md,
# "Limitations"): runs ON the GPU machine, from the repository root. The corpus's JAX program
# (tests/gpu/corpus/python/jax_matmul.py, XLA_PYTHON_CLIENT_PREALLOCATE=false) alone once, then
# under kreplay in each variant R times; one line per variant: runs, crashes (SIGSEGV), the
# dispatches recorded before each crash, and whether a run's output equals the program's alone;
# below it, where each crash was (kreplay's crash report: the instruction's library and offset,
# and whether the thread was inside kreplay's handling of a CUDA call).
# Variants: the four headline groups (three hardware passes, one of SASS metrics) with the
# defaults, with the counter set-up left to the first dispatch (KREPLAY_EARLY_SETUP=0), without
# the warm-up (KREPLAY_WARM_UP=0), both; one group of SASS metrics (one hardware pass, nothing
# replayed) with the defaults and with KREPLAY_EARLY_SETUP=0; three groups without SASS metrics.
# Usage: bash bench/probes/jax_sass_crash.sh [bin dir (default .gpu-bin)] [R (default 3)]
# Logs under $OUT (default /tmp/jax_sass_crash).
set -u
BIN="${1:-.gpu-bin}"
R="${2:-3}"
OUT="${OUT:-/tmp/jax_sass_crash}"
PROGRAM=tests/gpu/corpus/python/jax_matmul.py
mkdir -p "$OUT"
if [ ! -f "$PROGRAM" ] || [ ! -x "$BIN/kreplay" ]; then
    echo "needs $PROGRAM (the corpus, fetched beside the repository) and $BIN/kreplay"
    exit 1
fi
export XLA_PYTHON_CLIENT_PREALLOCATE=false
HEADLINE="--pmc sm__warps_launched.sum smsp__inst_executed.sum --pmc smsp__sass_inst_executed_op_shared_ld.sum smsp__sass_thread_inst_executed_op_ffma_pred_on.sum --pmc l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum dram__sectors_read.sum lts__t_sectors_op_read.sum --pmc l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum lts__t_sectors_op_write.sum"
SASS="--pmc smsp__sass_inst_executed_op_shared_ld.sum smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
NO_SASS="--pmc sm__warps_launched.sum smsp__inst_executed.sum --pmc l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum dram__sectors_read.sum lts__t_sectors_op_read.sum --pmc l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum lts__t_sectors_op_write.sum"
# name | environment (NAME=VALUE, space-separated, or -) | groups
VARIANTS="headline|-|$HEADLINE
headline, no early set-up|KREPLAY_EARLY_SETUP=0|$HEADLINE
headline, no warm-up|KREPLAY_WARM_UP=0|$HEADLINE
headline, neither|KREPLAY_EARLY_SETUP=0 KREPLAY_WARM_UP=0|$HEADLINE
SASS alone (one pass)|-|$SASS
SASS alone, no early set-up|KREPLAY_EARLY_SETUP=0|$SASS
three groups, no SASS|-|$NO_SASS"

timeout 120 python3 "$PROGRAM" >"$OUT/alone.out" 2>"$OUT/alone.err" || {
    echo "the program fails alone (see $OUT/alone.err)"
    exit 1
}
printf '%-32s %5s %8s  %-24s %s\n' variant runs crashed "dispatches at each crash" "output as alone"
n=0
while IFS='|' read -r name envs groups; do
    n=$((n + 1))
    crashed=0 at="" same=0 places=""
    for i in $(seq 1 "$R"); do
        tag="v${n}_$i"
        env_words=()
        [ "$envs" != "-" ] && read -r -a env_words <<<"$envs"
        # shellcheck disable=SC2086 # the groups are words
        env "${env_words[@]}" timeout 150 "$BIN/kreplay" $groups --replay-mode kernel \
            --kernel-replay-beta-enabled -d "$OUT/$tag" -o out -f rocpd -- python3 "$PROGRAM" \
            >"$OUT/$tag.out" 2>"$OUT/$tag.err"
        if grep -q "SIGSEGV" "$OUT/$tag.err"; then
            crashed=$((crashed + 1))
            at="$at $(grep -m1 -o '^kreplay: [0-9]* dispatch' "$OUT/$tag.err" | grep -o '[0-9]*')"
            # Where (kreplay's crash report: the instruction's library+offset, inside or not).
            where=$(grep -m1 -o 'instruction [^ ,]*, on a thread [a-z]*' "$OUT/$tag.err")
            [ -n "$where" ] && places="$places; $where"
        fi
        cmp -s "$OUT/alone.out" "$OUT/$tag.out" && same=$((same + 1))
        rm -rf "${OUT:?}/$tag"
    done
    printf '%-32s %5s %8s  %-24s %s\n' "$name" "$R" "$crashed" "${at:- -}" "$same/$R"
    [ -n "$places" ] && echo "    where:${places#;}"
done <<<"$VARIANTS"
