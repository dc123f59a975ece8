//! The injected library loads CUPTI without `libnvperf_host.so` (57 ms of the application's
//! `cuInit` on the GPU machine) and opens it before the first profiler call. A test binary of
//! its own: CUPTI is loaded once per process.

fn mapped(library: &str) -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .any(|line| line.ends_with(library))
}

#[test]
fn cupti_loads_without_libnvperf_host_until_a_profiler_call_needs_it() {
    assert!(
        std::env::var_os(kreplay_cuda::loader::ENV_CUPTI_DIR).is_some(),
        "set KREPLAY_CUPTI_DIR to the nvidia-cuda-cupti wheel's nvidia/cu13/lib (.ci/run does): a folder off the loader path, where CUPTI cannot find libnvperf_host.so by itself"
    );
    kreplay_cuda::loader::defer_nvperf_host();
    kreplay_cuda::loader::cupti().expect("CUPTI loads");
    assert!(mapped("libcupti.so.13"));
    assert!(
        !mapped(kreplay_cuda::loader::NVPERF_HOST),
        "opened while loading CUPTI"
    );
    kreplay_cuda::loader::ensure_nvperf_host().expect("libnvperf_host.so opens");
    assert!(mapped(kreplay_cuda::loader::NVPERF_HOST));
    // Once more is free, and CUPTI's host API now works from this folder.
    kreplay_cuda::loader::ensure_nvperf_host().unwrap();
    let catalog =
        kreplay_cuda::catalog::CuptiCatalog::for_chip("GH100").expect("the host API works");
    drop(catalog);
}
