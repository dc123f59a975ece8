//! `libkreplay_inject.so`: CUDA loads it through `CUDA_INJECTION64_PATH` and calls `InitializeInjection`.
