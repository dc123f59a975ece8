#!/usr/bin/env bash
# Regenerates src/{types,driver,cupti}.rs with bindgen. Not a build step: the output is committed.
# Needs: bindgen-cli 0.73 (`cargo install bindgen-cli`), libclang (Debian: libclang-dev), and the
# headers of the wheels nvidia-cuda-cupti==13.0.85, nvidia-cuda-runtime==13.0.96 and nvidia-cuda-crt==13.0.88:
#   python3 -m pip download --no-deps nvidia-cuda-cupti==13.0.85 nvidia-cuda-runtime==13.0.96 nvidia-cuda-crt==13.0.88 -d /tmp/w
#   for w in /tmp/w/*.whl; do unzip -qo "$w" -d /tmp/w/x; done
#   INCLUDE=/tmp/w/x/nvidia/cu13/include ./generate.sh
#
# src/nvtx.rs (NVTX's callback parameter blocks) is not generated here: generated_nvtx_meta.h
# includes the NVTX v3 headers (nvtx3/nvToolsExt*.h, NVIDIA/NVTX's c/include), which these wheels
# lack. Where they are installed (a CUDA toolkit's include folder), the same bindgen call on a
# header including <generated_nvtx_meta.h>, with
#   --allowlist-type 'nvtx.*_params|nvtxEventAttributes_v2' --allowlist-var 'NVTX_MESSAGE_.*'
# gives the blocks src/nvtx.rs writes by hand (its tests check their layout).
set -euo pipefail
cd "$(dirname "$0")"
: "${INCLUDE:?set INCLUDE to the wheels nvidia/cu13/include folder}"
clang_args=(-- -x c++ -std=c++17 -I"$INCLUDE")
common=(--no-doc-comments --use-core --rust-target 1.80 --no-layout-tests)

# All types, constants and enums, no functions.
bindgen wrapper.h "${common[@]}" --ignore-functions \
    --allowlist-file '.*/(cuda|cupti.*|generated_cuda_meta|cuda_stdint)\.h' \
    --default-enum-style consts --with-derive-default \
    -o src/types.rs "${clang_args[@]}"

# Driver functions (libcuda.so.1), resolved at run time; types come from types.rs.
bindgen wrapper.h "${common[@]}" --dynamic-loading Driver \
    --allowlist-function 'cu[A-Z].*' --blocklist-type '.*' \
    --raw-line 'use crate::types::*;' \
    -o src/driver.rs "${clang_args[@]}"

# CUPTI functions (libcupti.so.13), resolved at run time.
bindgen wrapper.h "${common[@]}" --dynamic-loading Cupti \
    --allowlist-function 'cupti.*' --blocklist-type '.*' \
    --raw-line 'use crate::types::*;' \
    -o src/cupti.rs "${clang_args[@]}"
