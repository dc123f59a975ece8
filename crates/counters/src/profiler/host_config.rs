//! Checks of [`HostConfig`] (the safe layer's configuration of a schedule's hardware passes,
//! one `ConfigAddMetrics` call each) against CUPTI's host library, with no GPU.

use crate::catalog::host::host_api_lock;
use kreplay_cuda::cupti::host_config::HostConfig;
use kreplay_cuda::cupti::Cupti;
use kreplay_cuda::error::CudaError;

/// The hardware passes of a configuration built from `calls` (one `ConfigAddMetrics` each), on
/// `chip` without a device (no availability image): what the schedule of packed passes
/// becomes. Used by the tests below (GPU-less, with the CUPTI wheel) to check that each call
/// stays a pass of its own.
fn host_schedule_passes(
    cupti: &'static Cupti,
    chip: &str,
    calls: &[Vec<String>],
) -> Result<usize, CudaError> {
    let _host = host_api_lock();
    let mut config = HostConfig::build(cupti, chip, &[], calls)?;
    config.passes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(metrics: &[&str]) -> Vec<String> {
        metrics.iter().map(|m| m.to_string()).collect()
    }

    /// GPU-less, with the CUPTI wheel `.ci/run` installs: one `ConfigAddMetrics` call per
    /// hardware pass gives a configuration of exactly that many passes, never merged (two calls
    /// that would fit one pass together stay two) — what lets CUPTI schedule a unit's passes
    /// while every group stays whole in its own pass.
    #[test]
    fn each_add_metrics_call_stays_a_hardware_pass_of_its_own() {
        let _ = crate::catalog::tests_support::gh100();
        let cupti = kreplay_cuda::loader::cupti().unwrap_or_else(|e| panic!("{e}"));
        let warps = names(&["sm__warps_launched.sum", "smsp__inst_executed.sum"]);
        let dram = names(&["dram__bytes_read.sum", "lts__t_sectors.sum"]);
        let together: Vec<String> = warps.iter().chain(&dram).cloned().collect();
        let passes = |calls: &[Vec<String>]| {
            host_schedule_passes(cupti, "GH100", calls).unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(passes(&[together]), 1, "one call: one pass");
        assert_eq!(
            passes(&[warps.clone(), dram.clone()]),
            2,
            "two calls: two passes"
        );
        // The benchmark's four groups, packed into three hardware passes on GH100.
        let headline = [
            names(&[
                "sm__warps_launched.sum",
                "smsp__inst_executed.sum",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
                "dram__sectors_read.sum",
                "lts__t_sectors_op_read.sum",
            ]),
            names(&[
                "smsp__sass_inst_executed_op_shared_ld.sum",
                "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
            ]),
            names(&[
                "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                "lts__t_sectors_op_write.sum",
            ]),
        ];
        assert_eq!(passes(&headline), 3);
        let all: Vec<String> = headline.iter().flatten().cloned().collect();
        assert_eq!(passes(&[all]), 3, "CUPTI's own split of the union");
        // A metric that alone needs several passes keeps its count in a schedule: a hardware
        // pass of the profiler spans that many executions.
        let throughput = names(&["sm__throughput.avg.pct_of_peak_sustained_elapsed"]);
        let alone = passes(std::slice::from_ref(&throughput));
        assert_eq!(
            alone, 8,
            "sm__throughput's passes on GH100 (as tests/gpu/run.py states)"
        );
        assert_eq!(passes(&[warps, throughput]), alone + 1);
    }
}
