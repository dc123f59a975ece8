#!/usr/bin/env bash
# Probe: what the NVIDIA driver publishes without CUDA (the identity cache's key, crates/cuda/
# src/catalog/identity_cache.rs), and how long nvidia-smi takes for comparison. Run on the GPU
# machine; prints each command before its output.
set -x
cat /sys/module/nvidia/version; head -2 /proc/driver/nvidia/version
ls -la /proc/driver/nvidia/ /proc/driver/nvidia/gpus/ 2>&1 | head -30
for f in /proc/driver/nvidia/gpus/*/information; do cat "$f"; done
ls /proc/driver/nvidia/gpus/*/ 2>&1
find /proc/driver/nvidia/capabilities 2>/dev/null | head -20
grep -i profil /proc/driver/nvidia/params
ls /dev/nvidia* 2>&1 | head
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}"
time nvidia-smi --query-gpu=uuid,mig.mode.current --format=csv,noheader
