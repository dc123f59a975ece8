#!/usr/bin/env bash
# Probe (H200): does programming the counters ahead (the set-up thread's warm-up) keep replay
# windows whole? Runs the demo through the CLI (windows, 6 dispatches in one window) with the
# warm-up off and on; prints the csv line count and what the tool said. From the repo root on
# the GPU machine, binaries in .gpu-bin.
for W in 0 1; do
  d=$(mktemp -d)
  KREPLAY_WARM_UP=$W KREPLAY_DEBUG=1 .gpu-bin/kreplay --pmc sm__warps_launched.sum smsp__inst_executed.sum --pmc sm__warps_launched.sum dram__bytes_read.sum --replay-mode kernel --kernel-replay-beta-enabled -d "$d" -o demo -f csv -- .gpu-bin/kreplay-demo > "$d/log" 2>&1
  echo "KREPLAY_WARM_UP=$W rc=$? $(grep -c . "$d/demo_counter_collection.csv") csv lines; $(grep -h 'lost its\|dispatch(es) of\|not programmed\|waited\|start(s)' "$d/log" | tr '\n' ' ' | cut -c1-400)"
done
