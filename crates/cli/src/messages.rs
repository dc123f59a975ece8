//! The command line's refusals and warnings that more than one place gives (or tests compare),
//! worded as rocprofv3 words them where it has the same one.

use kreplay_format::stats_out::DOMAINS;

pub const MSG_BETA: &str = "--replay-mode kernel requires acknowledgement that kernel replay is a beta feature via --kernel-replay-beta-enabled";
pub const MSG_NO_COUNTERS: &str =
    "--replay-mode kernel requires counter collection (--pmc, input-file pmc, or pmc_groups)";
pub const MSG_PMC_AND_GROUPS: &str = "Cannot specify both --pmc and (input file) pmc_groups";

pub const MSG_HOST_STAGING_WITHOUT_REPLAY: &str = "--host-staging-max applies only to kernel replay (the snapshots it bounds); add --replay-mode kernel --kernel-replay-beta-enabled, or remove it";
pub const MSG_WINDOW_WITHOUT_REPLAY: &str = "--replay-window (input-file replay_window) applies only to kernel replay; add --replay-mode kernel --kernel-replay-beta-enabled, or remove it";

/// Kernel replay asked together with services that would see every pass.
pub fn msg_conflict(services: &[&str]) -> String {
    format!(
        "--replay-mode kernel cannot be combined with {}. Kernel replay only varies counter groups from one pass to the next; every other service stays on for all of the passes and would report each kernel once per pass. Collect them in a separate run.",
        services.join(" or ")
    )
}

/// rocprofv3's refusal of a stats or summary option when nothing is traced.
pub fn msg_no_tracing(option: &str) -> String {
    format!("No tracing options were enabled for --{option} option; kreplay traces kernel dispatches with --pmc, --metrics or --kernel-trace")
}

pub const MSG_STATS_WITHOUT_CSV: &str = "kreplay: warning: --stats writes <o>_kernel_stats.csv and <o>_domain_stats.csv with -f csv only, as rocprofv3 does; add -f csv";
pub const MSG_SUMMARY_SETTINGS_ALONE: &str = "kreplay: warning: --summary-output-file and -u/--summary-units take effect only with -S/--summary, -D/--summary-per-domain or --summary-groups; no summary is printed";

/// A `--summary-groups` expression that selects no domain kreplay traces.
pub fn msg_group_matches_nothing(regex: &str) -> String {
    let domains: Vec<&str> = DOMAINS.iter().map(|(domain, _)| *domain).collect();
    format!(
        "kreplay: warning: --summary-groups '{regex}' matches no domain kreplay traces ({}); it adds no table",
        domains.join(", ")
    )
}

/// An empty `--pmc` (rocprofv3's words).
pub fn msg_empty_group(index_from_1: usize) -> String {
    format!("Empty counter group in --pmc flag {index_from_1}. Each --pmc must specify at least one counter.")
}
