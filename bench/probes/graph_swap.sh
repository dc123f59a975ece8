#!/usr/bin/env bash
# Probe, on the GPU machine from the repository root: can a CUPTI callback replace the executable
# graph of a cuGraphLaunch (GRAPH_SWAP=1: the app should print 0), and launch its kernel nodes,
# deep-copied at instantiation, itself (GRAPH_SWAP=2: 33 again)? Alone the app prints 33.
# Usage: bench/probes/graph_swap.sh   (logs under $OUT)
set -u
OUT="${OUT:-/tmp/graph_swap}"
mkdir -p "$OUT"
W="$(mktemp -d)"
CUDA="$(dirname "$(dirname "$(command -v nvcc)")")"
INC="$(dirname "$(find "$CUDA" / -name cupti.h -path '*include*' 2>/dev/null | head -1)")"
LIB="$(dirname "$(find "$CUDA" / -name 'libcupti.so*' 2>/dev/null | head -1)")"
echo "cupti.h in $INC, libcupti in $LIB"
nvcc -O2 -arch=sm_90 -o "$W/app" bench/probes/graph_swap_app.cu || exit 1
gcc -O2 -shared -fPIC -o "$W/inject.so" bench/probes/graph_swap_inject.c -I"$CUDA/include" -I"$INC" \
    -L"$LIB" -Wl,-rpath,"$LIB" -lcupti -L"$CUDA/lib64/stubs" -lcuda || exit 1
echo "== alone: $("$W/app" 2>&1)"
for m in 0 1 2; do
    echo "== GRAPH_SWAP=$m"
    GRAPH_SWAP=$m CUDA_INJECTION64_PATH="$W/inject.so" timeout 60 "$W/app" 2>&1 | tail -20
done
