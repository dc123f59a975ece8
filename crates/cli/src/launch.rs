//! Running one planned run: the application is started with the tool's configuration in its
//! environment (`KREPLAY_CONFIG`, and `CUDA_INJECTION64_PATH` so that `cuInit` loads
//! `libkreplay_inject.so`); every process it starts writes its own database into a private
//! staging folder; after it exits (also when it crashed) the databases are merged and written
//! in the requested formats, and the staging folder is removed.

mod application;
mod destination;
mod launcher;
mod outputs;
mod release;
mod running;
mod signals;

pub use application::{echo_config, exe_dir, find_inject_lib, SIM_APP_NAME};
pub use destination::{check_destination, writable_folder};
pub use launcher::{record_count, Launcher, RunResult};
pub use release::{serve as serve_release_helper, HOLD_ARG};
pub use signals::stop_asked;

/// kreplay's signal handling after a run's application ended, held until the run's account is
/// printed: a Ctrl-C or SIGTERM then says the outputs are being finished instead of ending kreplay
/// before its last lines.
pub struct Finishing {
    signals: signals::SignalGuard,
}

impl Finishing {
    /// kreplay exits next (the plan's last run, or a stopped one): a signal from now on is
    /// noted, never ends kreplay, until the process exits.
    pub fn until_exit(self) {
        self.signals.until_exit();
    }
}

/// Runs the application once for `spec` and writes its outputs.
pub fn execute(
    spec: &crate::plan::RunSpec,
    launcher: &Launcher,
) -> anyhow::Result<(RunResult, Finishing)> {
    let mut prepared = application::prepare(spec, launcher)?;
    let (ended, signals) = running::run_application(&mut prepared, launcher)?;
    match outputs::collect_and_write(spec, &prepared, ended) {
        Ok(result) => Ok((result, Finishing { signals })),
        // kreplay says why and exits next: a late signal must not take the place of its status.
        Err(e) => {
            signals.until_exit();
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests;
