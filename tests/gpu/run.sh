#!/usr/bin/env bash
# GPU checks of kreplay's kernel replay. Runs ON the GPU machine, from the repository root, with
# the release binaries built elsewhere and carried along, in $KREPLAY_BIN (default
# target/release): libkreplay_inject.so, kreplay-demo and kreplay.
# Builds tests/gpu/replay_checks.cu with nvcc, runs every check (tests/gpu/run.py), writes the
# full log and the table under $OUT (default /tmp/kreplay-gpu), and prints ONE table last.
# KREPLAY_GPU_ONLY selects sections, comma-separated (e.g. graphs,sections; `core` is the
# per-dispatch checks no other section holds; an unknown name stops the run):
# KREPLAY_GPU_ONLY=windows runs only the replay-window checks (KREPLAY_GPU_WINDOW=N|auto sets
# their window size, default 64), KREPLAY_GPU_ONLY=cache only the device-identity cache checks,
# KREPLAY_GPU_ONLY=multipass only the metric that needs several passes through --metrics,
# KREPLAY_GPU_ONLY=effects only printf, device heap and signal endings,
# KREPLAY_GPU_ONLY=graphs only CUDA graph launches run node by node (captured and graph-API graphs),
# KREPLAY_GPU_ONLY=sections only `--set full` against `ncu --set full` (Nsight Compute's section files;
# the pages compared are kept gzipped under $OUT/sections/<program>/),
# (KREPLAY_GPU_SECTIONS=<text>[,<text>...] only those whose name holds one; KREPLAY_GPU_SECTIONS_CACHE=none
# gives both tools --cache-control none),
# KREPLAY_GPU_ONLY=deferral only the windows that stay open across host syncs and copies (the
# bench's sync loop and CG solver, PyTorch, with groups in three hardware passes),
# KREPLAY_GPU_ONLY=fidelity only the cache-control checks (DRAM and L2 counters of memory-bound
# kernels in two hardware passes, --cache-control all and none, against ncu's),
# KREPLAY_GPU_ONLY=trace only the Perfetto trace of the CG solver (read back with Perfetto's Python
# package: carry .deps/py, which .ci/run fills, or set KREPLAY_PYTHONPATH; cg_results.pftrace is
# kept under $OUT),
# KREPLAY_GPU_ONLY=multigpu only DDP on 2 GPUs under torchrun (NCCL kernels run once, per-rank
# outputs; needs 2 GPUs, nvidia-h200-x2, and is reported as not run with fewer),
# KREPLAY_GPU_ONLY=corpus the third-party corpus (tests/gpu/corpus.sh, below; only when named).
# Exit status: 0 when every check passes, 1 otherwise.
set -u
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/kreplay-gpu}"
mkdir -p "$OUT"
WORK="$(mktemp -d)"
export KREPLAY_BIN="${KREPLAY_BIN:-target/release}"
export KREPLAY_GPU_WORK="$WORK" KREPLAY_GPU_OUT="$OUT"
for f in "$KREPLAY_BIN/libkreplay_inject.so" "$KREPLAY_BIN/kreplay-demo" "$KREPLAY_BIN/kreplay"; do
    [ -e "$f" ] || { echo "missing $f: build it with cargo build --release and carry it"; exit 1; }
done
CORPUS=tests/gpu/corpus.sh
# The corpus section (KREPLAY_GPU_ONLY=corpus; not in the default run, which it would make too
# long for one call): every program of the corpus alone and under kernel replay, its own table in
# $OUT/corpus/corpus_table.txt; the whole corpus takes about 12 minutes, so a 600 s call runs a
# subset (KREPLAY_CORPUS_ONLY=a,b,...). Its status joins this script's.
sections=",$(printf %s "${KREPLAY_GPU_ONLY:-}" | tr -d ' '),"
corpus_rc=0
if [[ "$sections" == *,corpus,* ]]; then
    if [ -f "$CORPUS" ] && [ -d tests/gpu/corpus/cuda-samples ]; then
        OUT="$OUT/corpus" bash "$CORPUS"
        corpus_rc=$?
    else
        echo "corpus not run: $CORPUS and tests/gpu/corpus/ are not in the working tree (fetched, never committed)"
        corpus_rc=1
    fi
    rest="$(echo "$sections" | tr ',' '\n' | grep -v -e '^corpus$' -e '^$' | paste -sd, -)"
    [ -n "$rest" ] || exit $((corpus_rc != 0))
    export KREPLAY_GPU_ONLY="$rest"
fi
build() {  # output source [flags]
    local out="$1" src="$2"; shift 2
    if ! nvcc -O2 -std=c++17 -arch=sm_90 -o "$WORK/$out" "$src" "$@" >>"$OUT/nvcc.log" 2>&1; then
        cat "$OUT/nvcc.log"
        echo "nvcc failed on $src"
        exit 1
    fi
}
build replay_checks tests/gpu/replay_checks.cu
build syncloop bench/workloads/syncloop.cu
build solver bench/workloads/solver.cu -lcublas
build memory_bound tests/gpu/memory_bound.cu -lcublas -lcuda
build reset_trace tests/gpu/reset_trace.cu
# Only the memory section runs it, and says so when it did not build.
nvcc -O2 -std=c++17 -arch=sm_90 -o "$WORK/memory_traffic" tests/gpu/memory_traffic.cu >>"$OUT/nvcc.log" 2>&1 \
    || echo "nvcc failed on tests/gpu/memory_traffic.cu (the memory section reports it)"
# Only the multigpu section runs it, and says so when it did not build.
nvcc -O2 -std=c++17 -arch=sm_90 -o "$WORK/two_devices" tests/gpu/two_devices.cu >>"$OUT/nvcc.log" 2>&1 \
    || echo "nvcc failed on tests/gpu/two_devices.cu (the multigpu section reports it)"
# NVIDIA's matrixMul (sections check) and graph samples (graphs check) come from the third-party
# corpus: its sources and the script that builds them (tests/gpu/corpus.sh) are fetched into the
# working tree and never committed, so this script holds no recipe for them; without them those
# checks say "not run".
if [ -f "$CORPUS" ] && [ -d tests/gpu/corpus/cuda-samples ]; then
    if ! OUT="$OUT/sample-builds" KREPLAY_CORPUS_WORK="$WORK/sample-builds" KREPLAY_CORPUS_BUILD_ONLY=1 \
        KREPLAY_CORPUS_ONLY=matrixMul,simpleCudaGraphs,jacobiCudaGraphs bash "$CORPUS" >>"$OUT/nvcc.log" 2>&1; then
        tail -20 "$OUT/nvcc.log"
        echo "nvcc failed on a sample of the corpus (logs: $OUT/sample-builds/logs)"
        exit 1
    fi
    for s in matrixMul simpleCudaGraphs jacobiCudaGraphs; do
        [ -x "$WORK/sample-builds/bin/$s" ] && ln -s "$WORK/sample-builds/bin/$s" "$WORK/$s"
    done
fi
nvcc -cubin -arch=sm_90 -o "$WORK/reload_kernel.cubin" tests/gpu/reload_kernel.cu >>"$OUT/nvcc.log" 2>&1 || { cat "$OUT/nvcc.log"; exit 1; }
python3 -u tests/gpu/run.py
rc=$?
[ "$corpus_rc" = 0 ] || rc=1
exit "$rc"
