#!/usr/bin/env bash
# Probe, on the GPU machine from the repository root: which L2 flush leaves a kernel's data out
# of L2 and nothing dirty (what crates/cuda/src/flush.rs does for --cache-control all, and why).
# A 16 MiB "victim" kernel is warmed into L2 (read twice), a flush runs, then the victim runs
# again; Nsight Compute (--cache-control none, so that it does not flush itself) measures the
# victim's DRAM reads and writes and L2 read hits, next to ncu --cache-control all as the goal.
# A good flush: DRAM read ≈ 16.78 MB, write ≈ 0, few hits. Prints the flush's cost too.
#   l2_flush_methods.cu: memset, device-to-device copy, one read sweep (3 x L2), in the app's
#     context or a context of its own;
#   l2_flush_recipes.cu (+ l2_flush_kernels.cu as PTX): repeated read sweeps, evict-last loads,
#     prefetches, discards, in the app's context or a context of its own.
# Measured on the H200 (2026-12-01 17:5x UTC): a memset or copy of 3 x L2 displaces the victim but
# leaves dirty lines (3.9-15.6 MB of DRAM writes charged to the victim); one read sweep of 3 x L2
# or three of 1.25 x L2 (then a discard) leave it cold and clean like ncu's flush (≈ 50-70 us in
# the app's context, ≈ 350 us through a context of its own); one evict-last or prefetch sweep of
# 1.25 x L2 leaves part of it. (An earlier version that also profiled the warming kernel
# suggested single sweeps did not work: that was the warm kernel being measured.)
# 2026-12-02 07:40 UTC: copies of 1.25 x or 3 x L2 to pinned host memory (d2h1, d2h) do not flush
# at all (the victim still hits in L2: the copy engine's reads leave it as it was); on the 64 KiB,
# 8-block victim `small` the sweep in a context of its own leaves 2315 ns and 826 read hits, ncu's
# flush 2384 ns and 826, the sweep in the app's context 2213 ns and 309: the flush's own context
# does not make small kernels slower than after ncu's flush.
# 2026-12-02 15:28 UTC, victim `small` with METRICS (membar, LTC-fabric and GPC-constant-cache
# sectors): after ncu's flush 1,339 / 1,472 / 896, no flush 1,229 / 458 / 309, the sweep in the
# app's context 1,229 / 1,398 / 309, in a context of its own 3,275 / 2,510 / 896: the switch back
# from another context adds the membar and fabric sectors, and empties the constant caches as
# ncu's flush does. (The recipes did not know `small` then and ran their 16 MiB victim; they do
# now.) Recipe `fused`: the whole flush as one kernel (three sweeps, then the last block discards),
# one profiler range per flush for KREPLAY_FLUSH_IN_APPLICATION; not yet run.
# VICTIMS (read inplace small), METHODS and RECIPES, space-separated, choose a subset.
set -u
D="${OUT:-/tmp}/l2_flush"; mkdir -p "$D"
P=bench/probes
nvcc -O2 -arch=sm_90 -o "$D/methods" $P/l2_flush_methods.cu -lcuda || exit 1
nvcc -O2 -arch=sm_90 -ptx -o "$D/kernels.ptx" $P/l2_flush_kernels.cu || exit 1
nvcc -O2 -arch=sm_90 -o "$D/recipes" $P/l2_flush_recipes.cu -lcuda || exit 1
export FLUSHK_PTX="$D/kernels.ptx"
# METRICS: the victim's metrics instead (one hardware pass: with --cache-control none, ncu's
# later passes would follow its own restore rather than the flush), printed by name.
M=${METRICS:-dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read_lookup_hit.sum,gpu__time_duration.sum}
measure() {  # label control program args...
    local label="$1" control="$2"; shift 2
    timeout 60 ncu --cache-control "$control" --clock-control none -k regex:victim --metrics $M --csv "$@" \
        > "$D/ncu.csv" 2> "$D/ncu.err"
    python3 - "$label" "$D/ncu.csv" <<'PY'
import collections, csv, sys
label, path = sys.argv[1], sys.argv[2]
rows = [r for r in csv.reader(open(path)) if len(r) > 10]
values = collections.defaultdict(list)
for r in rows[1:]:
    d = dict(zip(rows[0], r))
    try:
        values[d["Metric Name"]].append(float(d["Metric Value"].replace(",", "")))
    except (KeyError, ValueError):
        pass
mean = lambda k, s=1: "%.2f" % (sum(values[k]) / len(values[k]) / s) if values.get(k) else "-"
if "dram__bytes_read.sum" not in values:
    print("%-36s %s" % (label, ", ".join(f"{k} {mean(k)}" for k in values)))
    sys.exit(0)
print("%-36s DRAM read MB %s, write MB %s, L2 read hits %s, duration ns %s" % (label, mean("dram__bytes_read.sum", 1e6),
      mean("dram__bytes_write.sum", 1e6), mean("lts__t_sectors_op_read_lookup_hit.sum"), mean("gpu__time_duration.sum")))
PY
}
for victim in ${VICTIMS:-read inplace}; do
    measure "goal: ncu flush / $victim" all "$D/methods" none "$victim"
    for mode in ${METHODS:-none memset copy kread memset_kread ctxread d2h d2h1}; do
        timeout 20 "$D/methods" "$mode" "$victim"
        measure "$mode / $victim" none "$D/methods" "$mode" "$victim"
    done
    for spec in ${RECIPES-read3:app:1.25 read+read+discard:app:1.0 read3+discard:app:1.25 evl+discard:app:1.25 \
                pf+discard:app:2 read3+discard:ctx:1.25 fused:app:1.25}; do
        IFS=: read -r recipe where scale <<< "$spec"
        timeout 30 "$D/recipes" "$recipe" "$where" "$victim" "$scale"
        measure "$recipe ($where, $scale x L2) / $victim" none "$D/recipes" "$recipe" "$where" "$victim" "$scale"
    done
done
nvcc -o "$D/flusher_memory" $P/flusher_memory.cu -lcuda && "$D/flusher_memory"
