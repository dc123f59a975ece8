//! What the engine says once per process (a warning record and a line through its logger), and
//! the end on a fatal condition.

use super::*;
use kreplay_format::format_bytes;

impl<K: Backend> Engine<K> {
    pub(super) fn decline_notice(&self, outcome: ReplayOutcome) {
        let message = match outcome {
            ReplayOutcome::DeclinedStreamCapture => {
                "launches recorded into a stream capture do not execute and are not profiled; the graph built from them is, when it is launched (node by node, unless a warning says it runs whole)"
            }
            ReplayOutcome::DeclinedDevicePrintf => {
                "kernels that call printf are not replayed (their output would repeat once per pass); they run once with the first counter group only (or timestamps only when the groups need several hardware passes)"
            }
            ReplayOutcome::DeclinedDeviceHeap => {
                "kernels that use the device heap (malloc, free, device new or delete) are not replayed (the heap is not restored between passes); they run once with the first counter group only (or timestamps only when the groups need several hardware passes)"
            }
            ReplayOutcome::DeclinedCollective => {
                "kernels of collective-communication libraries (NCCL, NVSHMEM) are not replayed (a replay would wait for peers that do not run it again); they run once with the first counter group only (or timestamps only when the groups need several hardware passes)"
            }
            ReplayOutcome::DeclinedPeerMemory => {
                "kernels whose parameters point into another GPU's memory (peer access) are not replayed (a snapshot covers the launch's own device only: a replay would write that memory again); they run once, with replays on every device held off while they are launched, with the first counter group only (or timestamps only when the groups need several hardware passes)"
            }
            ReplayOutcome::DeclinedPageableHost => {
                "kernels whose parameters point into ordinary (pageable) host memory, which this GPU reaches directly, are not replayed (no snapshot covers that memory: a replay would change what the application computes); they run once with the first counter group only (or timestamps only when the groups need several hardware passes)"
            }
            ReplayOutcome::DeclinedMultiDevice => {
                "multi-device cooperative launches are not replayed; they run once with the first counter group only (or timestamps only when the groups need several hardware passes)"
            }
            _ => return,
        };
        self.notices.once(
            outcome.as_str(),
            message,
            self.sink.as_ref(),
            self.options.logger.as_ref(),
        );
    }

    /// Why a dispatch whose tracked memory (`bytes`) fits no staging runs once: above
    /// `--host-staging-max` (its copies across PCIe would cost seconds a dispatch), or too
    /// large for the host's memory as well.
    pub(super) fn too_large_notice(&self, bytes: u64) {
        let (key, message) = if self.host_staging_admits(bytes) {
            (
                "declined_snapshot_too_large",
                format!(
                    "a dispatch's tracked memory ({}) did not fit in device or host staging, so it ran once with the first counter group only, or timestamps only when the groups need several hardware passes (first occurrence shown); free memory or use application replay (omit --replay-mode kernel)",
                    format_bytes(bytes)
                ),
            )
        } else {
            (
                "declined_snapshot_above_host_staging_max",
                format!(
                    "a dispatch's tracked memory ({}) does not fit device staging and is above --host-staging-max ({}): staged on the host it would cross PCIe once per execution, seconds a dispatch; it ran once with the first counter group only, or timestamps only when the groups need several hardware passes (first occurrence shown). Raise --host-staging-max to replay it anyway, keep the application's allocations smaller (JAX: XLA_PYTHON_CLIENT_PREALLOCATE=false), or use application replay (omit --replay-mode kernel)",
                    format_bytes(bytes),
                    format_bytes(self.config.host_staging_max_bytes)
                ),
            )
        };
        self.notice(key, &message);
    }

    pub(super) fn backend_notice(&self, operation: &str, error: &BackendError) {
        self.notices.once(
            &format!("backend-{operation}"),
            &format!("{operation} failed ({error}); affected dispatches are not replayed (first occurrence shown)"),
            self.sink.as_ref(),
            self.options.logger.as_ref(),
        );
    }

    /// Says `message` once per process under `key`: a Warning record and a `kreplay: ` line
    /// through the engine's logger (silenced below `warning` level). For the engine's own
    /// warnings and for the device layer's (one bookkeeping for both).
    pub fn warn_once(&self, key: &str, message: &str) {
        self.notice(key, message);
    }

    /// The conditions of the unit just closed on `device`, warning once when its clocks varied.
    pub(super) fn unit_conditions<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        device: DeviceId,
    ) -> UnitConditions {
        let conditions = backend.take_unit_conditions(device);
        if let Some((clock, [low, high])) = conditions.varied_clock() {
            self.notice(
                "clocks-varied",
                &format!("the {clock} clock varied between {low} and {high} MHz while the executions of a dispatch (or of a replay window) were measured (kreplay never locks clocks, as ncu --clock-control none): time-based counters may have been taken at different clocks; every dispatch's replay cost records the clocks seen"),
            );
        }
        conditions
    }

    pub(super) fn notice(&self, key: &str, message: &str) {
        self.notices.once(
            key,
            message,
            self.sink.as_ref(),
            self.options.logger.as_ref(),
        );
    }

    /// Stores every record (the sink is closed: the process is ending, and the database must be
    /// left complete), then runs the abort action.
    pub(super) fn fatal(&self, message: &str) {
        self.sink.send(Record::Warning(kreplay_format::Warning {
            message: format!("fatal: {message}"),
        }));
        self.sink.close();
        (self.options.abort)(message);
    }
}
