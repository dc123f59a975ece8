//! A later execution that failed: memory put back (or the process ended), the unit's records
//! sent without counters, and the notice of lost counters.

use super::executions::Replay;
use super::job::UnitJob;
use super::*;

impl<K: Backend> Engine<K> {
    /// A later execution failed: counters are lost; memory is put back from F when it was
    /// saved, and is otherwise fatal when it cannot be trusted.
    pub(super) fn pass_failed<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        job: &UnitJob<'_, K>,
        failure: PassFailure,
        replay: &mut Replay<K::Snapshot>,
    ) {
        match failure {
            PassFailure::Counters(message) => self.unit_counters_notice(&message),
            PassFailure::Fatal(message) => match replay.view.take() {
                Some(view) => {
                    self.unit_counters_notice(&format!(
                        "{message} (put back from the memory saved before the later passes)"
                    ));
                    self.put_back_view(backend, job, view, replay);
                }
                None => self.fatal(&message),
            },
        }
    }

    pub(super) fn unit_counters_notice(&self, message: &str) {
        self.notice(
            "window-pass-counters",
            &format!("a replay window lost its counters and its replay stopped ({message}); the application's memory is what it would be without kreplay"),
        );
    }
}
