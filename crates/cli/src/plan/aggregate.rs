//! rocprofv3's aggregate tracing options, `-r/--runtime-trace` and `-s/--sys-trace`, and what
//! each turns on: the one list of kreplay's tracing domains (a new domain is added here).
//!
//! rocprofv3's `--runtime-trace` traces the HIP runtime API, markers, memory operations and
//! kernel dispatches; `--sys-trace` the same and the HSA API beneath HIP. kreplay maps HIP's
//! runtime API onto the CUDA runtime API and HSA's onto the CUDA driver API: `-r` records the
//! calls the application makes itself (runtime calls, and driver calls made outside any), `-s`
//! also the driver calls the runtime makes for it ([`ApiLevel`]). Both turn on every other
//! domain kreplay has.

use super::settings::Given;
use kreplay_core::api_trace::ApiLevel;

impl Given {
    /// Every domain `-r`/`-s` turns on, as the options that ask for each one.
    fn aggregated_domains(&mut self) -> [&mut Option<bool>; 4] {
        [
            &mut self.kernel_trace,
            &mut self.marker_trace,
            &mut self.memory_copy_trace,
            &mut self.memory_allocation_trace,
        ]
    }

    /// Turns on what `-r`/`-s` include (as rocprofv3, whatever the domain's own option says).
    pub(super) fn apply_aggregates(&mut self) {
        if self.api_level() == ApiLevel::Off {
            return;
        }
        for domain in self.aggregated_domains() {
            *domain = Some(true);
        }
    }

    /// The API calls recorded: `-s` all, `-r` the application's own.
    pub(super) fn api_level(&self) -> ApiLevel {
        if self.sys_trace == Some(true) {
            ApiLevel::All
        } else if self.runtime_trace == Some(true) {
            ApiLevel::Application
        } else {
            ApiLevel::Off
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_aggregate_turns_on_every_domain_and_its_api_level() {
        for (runtime, sys, level) in [
            (None, None, ApiLevel::Off),
            (Some(true), None, ApiLevel::Application),
            (None, Some(true), ApiLevel::All),
            (Some(true), Some(true), ApiLevel::All),
            (Some(false), Some(false), ApiLevel::Off),
        ] {
            let given = Given {
                runtime_trace: runtime,
                sys_trace: sys,
                ..Given::default()
            };
            let settings = given.settings();
            assert_eq!(settings.api_trace, level);
            let on = level != ApiLevel::Off;
            assert_eq!(
                [
                    settings.kernel_trace,
                    settings.marker_trace,
                    settings.memory_copy_trace,
                    settings.memory_allocation_trace
                ],
                [on; 4]
            );
            assert_eq!(settings.traces_anything(), on);
        }
    }
}
