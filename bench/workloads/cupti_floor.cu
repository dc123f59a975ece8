// CUPTI alone, asked for what `kreplay --kernel-trace` asks of it and doing nothing else: an
// injection library (CUDA_INJECTION64_PATH) that subscribes to the driver API and resource
// callback domains with an empty callback and takes CONCURRENT_KERNEL activity records into
// 2 MiB buffers, counting them. bench/trace_cost.py runs the workloads under it: the floor that
// any CUPTI-based tracer pays per launch, so that kreplay's own cost is the difference.
// If CUPTI_FLOOR_OUT names a file, the number of kernel records is written there at exit (the
// benchmark checks it against the launches, so a library that failed to inject gives no figure).
// Host code only: built by the host compiler (g++ -shared -fPIC -x c++ ... -lcupti; nvcc would
// register a fat binary, which needs the CUDA runtime).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cupti.h>

namespace {

const size_t kBufferBytes = 2 << 20;  // as kreplay's activity buffers
// Counted on CUPTI's buffer thread, read at exit.
std::atomic<unsigned long long> kernel_records{0};

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(aligned_alloc(8, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
    *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ++kernel_records;
    }
    free(buffer);
}

void at_exit() {
    cuptiActivityFlushAll(1);
    if (const char* path = getenv("CUPTI_FLOOR_OUT")) {
        if (FILE* f = fopen(path, "w")) {
            fprintf(f, "%llu\n", kernel_records.load());
            fclose(f);
        }
    }
}

// A failed CUPTI call, said on stderr (the benchmark compares stdout only).
bool failed(const char* what, CUptiResult result) {
    if (result == CUPTI_SUCCESS) return false;
    fprintf(stderr, "cupti_floor: %s failed (CUPTI error %d)\n", what, static_cast<int>(result));
    return true;
}

}  // namespace

extern "C" int InitializeInjection(void) {
    CUpti_SubscriberHandle subscriber;
    if (failed("cuptiSubscribe", cuptiSubscribe(&subscriber, on_callback, nullptr)) ||
        failed("cuptiEnableDomain(DRIVER_API)", cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API)) ||
        failed("cuptiEnableDomain(RESOURCE)", cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE)) ||
        failed("cuptiActivityRegisterCallbacks", cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) ||
        failed("cuptiActivityEnable", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))) {
        return 0;
    }
    atexit(at_exit);
    return 1;
}
