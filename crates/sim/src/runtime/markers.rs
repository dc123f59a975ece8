//! The software device's NVTX: push/pop and start/end ranges and marks, each handed to the
//! engine's one marker entry point ([`kreplay_core::Engine::marker`]) as the CUDA backend hands
//! it CUPTI's NVTX callbacks, timed on the device's clock (the dispatches' clock). Unprofiled, or
//! without `--marker-trace` or an NVTX filter, they do nothing. Also the profiler start and stop
//! calls (`cudaProfilerStart`/`cudaProfilerStop`), which bound `--selected-regions`.

use crate::runtime::{api_trace, SimRuntime};
use kreplay_core::markers::{MarkerCall, MarkerText};

impl SimRuntime {
    /// `nvtxRangePushA(message)`.
    pub fn range_push(&mut self, message: &str) {
        self.marker(MarkerCall::Push(MarkerText {
            operation: "nvtxRangePushA",
            message,
            ..MarkerText::default()
        }));
    }

    /// `nvtxDomainRangePushEx(domain, {category, message})`.
    pub fn domain_range_push(&mut self, domain: &str, message: &str, category: u32) {
        self.marker(MarkerCall::Push(MarkerText {
            operation: "nvtxDomainRangePushEx",
            domain,
            message,
            category,
        }));
    }

    /// `nvtxRangePop()`.
    pub fn range_pop(&mut self) {
        self.marker(MarkerCall::Pop { domain: "" });
    }

    /// `nvtxDomainRangePop(domain)`.
    pub fn domain_range_pop(&mut self, domain: &str) {
        self.marker(MarkerCall::Pop { domain });
    }

    /// `nvtxRangeStartA(message)`: returns the range's id, for [`SimRuntime::range_end`] on any
    /// thread (0 when markers are not recorded).
    pub fn range_start(&mut self, message: &str) -> u64 {
        self.marker(MarkerCall::Start {
            text: MarkerText {
                operation: "nvtxRangeStartA",
                message,
                ..MarkerText::default()
            },
            key: None,
        })
        .unwrap_or(0)
    }

    /// `nvtxRangeEnd(id)`.
    pub fn range_end(&mut self, id: u64) {
        self.marker(MarkerCall::End { key: id });
    }

    /// `nvtxMarkA(message)`.
    pub fn mark(&mut self, message: &str) {
        self.marker(MarkerCall::Mark(MarkerText {
            operation: "nvtxMarkA",
            message,
            ..MarkerText::default()
        }));
    }

    /// `cudaProfilerStart()`: the beginning of a selected region (`--selected-regions`).
    pub fn profiler_start(&mut self) {
        if let Some(engine) = self.engine.clone() {
            let id = self.next_correlation();
            self.api(Some(api_trace::PROFILER_START), id, |_| {
                engine.profiler_control(true)
            });
        }
    }

    /// `cudaProfilerStop()`: the end of a selected region.
    pub fn profiler_stop(&mut self) {
        if let Some(engine) = self.engine.clone() {
            let id = self.next_correlation();
            self.api(Some(api_trace::PROFILER_STOP), id, |_| {
                engine.profiler_control(false)
            });
        }
    }

    fn marker(&mut self, call: MarkerCall<'_>) -> Option<u64> {
        let engine = self.engine.clone()?;
        if !engine.markers_enabled() {
            return None;
        }
        let now_ns = self.device().marker_time_ns();
        engine.marker(call, now_ns)
    }
}
