#!/usr/bin/env python3
"""Probe, on the GPU machine from the repository root (issues 19 and 18): the fused flush's
layouts alone (bench/probes/flush_layouts.cu), outside kreplay: what each costs and what it
leaves in L2.

The module is crates/cuda/src/flush/l2_flush.ptx with its GPC-caches code written out as
flush.rs's module_ptx writes it (16,384 constant loads). Layouts, as flush_gpc / flush_discard:
GPC 0 none, 1 the first warp of each block runs every load; DISCARD 1 the last block discards,
2 every block after a grid barrier (a cooperative launch).
For each: the flush's time (events, after a 16 MiB copy, no profiler), then under
`ncu --cache-control none --clock-control none -k regex:victim` the victims after it: a 16 MiB
in-place update after the copy and the flush (DRAM writes: ncu's own flush leaves 0), a read of
the copied buffer (L2 hits: what the flush left of it) and a read of the flush buffer (hits:
what the discard left).
Seen on the H200, 2026-12-03 13:45 UTC (commit 353f5a1, whose kernel also had GPC 2: each of the
block's 16 warps a sixteenth of the loads, and +4: after the sweeps), median flush time:
  0/1 346 us   1/1 639 us   2/1 1,472 us   5/1 639 us   6/1 1,466 us
  0/2  69 us   1/2 215 us   2/2   547 us
so the last block's discard costs 277 us and the GPC code 146 us with the barrier (split between
warps, 2.3 times as long). Under ncu the in-place update wrote, in its first iteration and then
the two others: after 0/1 2.58 MB, 1.5-2 KB; after 1/1 146 KB, 8-13 KB; after 0/2 15 KB, 0;
after 1/2 59 KB, 0. L2 hits on the copied buffer 25,000-38,000 sectors (of 524,288) in every
layout; on the flush buffer 40,000-94,000 with the last block's discard, 124,000-169,000 with
every block's (of 2.46 M; clean lines). Under kreplay (dram_write.py) the in-place update wrote
9.7e4-1.1e5 B with 1/1 and 0 with 1/2.
Usage: python3 bench/probes/flush_layouts.py [GPC/DISCARD,...]   (files under $OUT)"""
import csv
import io
import os
import subprocess
import sys
import tempfile

OUT = os.path.join(os.environ.get("OUT", tempfile.mkdtemp()), "flush_layouts")
os.makedirs(OUT, exist_ok=True)
PTX = open("crates/cuda/src/flush/l2_flush.ptx").read()
LOADS = 16384
BEGIN, END = "\t// GPC caches: begin\n", "\t// GPC caches: end\n"
LAYOUTS = (sys.argv[1] if len(sys.argv) > 1 else "0/1,1/1,0/2,1/2").split(",")
METRICS = "dram__bytes_write.sum,dram__bytes_read.sum,lts__t_sectors_lookup_hit.sum,gpu__time_duration.sum"


def module():
    """The module as flush.rs's module_ptx writes it."""
    head, rest = PTX.split(BEGIN)
    _, tail = rest.split(END)
    code = []
    for i in range(LOADS):
        code.append(f"\tld.const.u32 \t%k8, [kreplay_gpc_constants+{(i * 4) % 65536}];\n\tadd.s32 \t%k{i % 8}, %k{i % 8}, %k8;\n")
    return head + BEGIN + "".join(code) + END + tail


def main():
    path = os.path.join(OUT, "module.ptx")
    open(path, "w").write(module())
    app = os.path.join(OUT, "flush_layouts")
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-o", app, "bench/probes/flush_layouts.cu", "-lcuda"], check=True)
    for layout in LAYOUTS:
        gpc, discard = layout.split("/")
        t = subprocess.run([app, path, gpc, discard, "time"], capture_output=True, text=True, timeout=120)
        print(f"== GPC {gpc} DISCARD {discard}: {t.stdout.strip()} {t.stderr.strip().splitlines()[-1] if t.stderr.strip() else ''}")
        n = subprocess.run(["ncu", "--cache-control", "none", "--clock-control", "none", "-k", "regex:victim",
                            "--metrics", METRICS, "--print-units", "base", "--csv", app, path, gpc, discard, "state"],
                           capture_output=True, text=True, timeout=300)
        open(os.path.join(OUT, f"ncu_{gpc}_{discard}.csv"), "w").write(n.stdout + n.stderr)
        rows = [r for r in csv.reader(io.StringIO(n.stdout)) if len(r) > 10]
        if not rows:
            print(f"   ncu gave nothing (rc {n.returncode}): {n.stderr.strip()[-200:]}")
            continue
        per = {}
        for r in rows[1:]:
            d = dict(zip(rows[0], r))
            per.setdefault(int(d["ID"]), {})[d["Metric Name"]] = d["Metric Value"].replace(",", "")
        names = ["inplace after copy+flush", "read copied after copy+flush", "read flush buffer after flush"]
        for i, k in enumerate(sorted(per)):
            v = per[k]
            print(f"   {names[i % 3]:30s} DRAM write {v.get('dram__bytes_write.sum')} read {v.get('dram__bytes_read.sum')} "
                  f"L2 hits {v.get('lts__t_sectors_lookup_hit.sum')} ns {v.get('gpu__time_duration.sum')}")


main()
