//! What the end-of-run summary and the `--stats` files need from the records, gathered while the
//! writers read them (a [`RecordObserver`] of the run): memory per kernel, per pass and counter,
//! per device, none per dispatch.

use super::{first_of_its_dispatch, outcome_label, Combined, Costs};
use kreplay_format::run::RecordObserver;
use kreplay_format::stats_out::KernelDurations;
use kreplay_format::{DispatchRecord, ProcessInfo, ReplayCost, RunData};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// A kernel's counters per pass, each combined over its dispatches.
pub(super) type PerPass = BTreeMap<Option<u32>, BTreeMap<String, Combined>>;

/// What one process's records gave.
struct Process {
    info: ProcessInfo,
    /// Kernel names by id: the described kernels', and "kernel N" for the others met.
    names: HashMap<u64, String>,
    /// The counter names its dispatches carry, in the order first met.
    samples: Vec<String>,
    /// Per agent: its dispatches, and of its replay costs how many had each outcome.
    dispatches: BTreeMap<u64, usize>,
    outcomes: BTreeMap<u64, BTreeMap<&'static str, usize>>,
    /// For the `--stats` files and `-S` tables.
    durations: KernelDurations,
}

/// A device's dispatches and its replay costs' outcomes (label -> count).
pub(super) type Device<'a> = (usize, &'a BTreeMap<&'static str, usize>);

/// The summary's figures, fed by the run's records.
pub struct Observed {
    processes: Vec<Process>,
    /// Kernel name -> (dispatches, its counters per pass), added in record order.
    pub(super) kernels: BTreeMap<String, (usize, PerPass)>,
    pub(super) costs: Costs,
}

impl Observed {
    /// Nothing seen yet of `data`'s processes; the kernels' names spill into `spill_dir` if
    /// they are many (`--kernel-rename`: a range per step).
    pub fn new(data: &RunData, spill_dir: Option<&Path>) -> Observed {
        let processes = data
            .processes
            .iter()
            .map(|p| {
                let mut names = HashMap::new();
                for k in &p.kernels {
                    // The first description of an id is the one a lookup finds.
                    names
                        .entry(k.kernel_id)
                        .or_insert_with(|| k.demangled_name.clone());
                }
                Process {
                    info: p.process.clone(),
                    names,
                    samples: Vec::new(),
                    dispatches: BTreeMap::new(),
                    outcomes: BTreeMap::new(),
                    durations: KernelDurations::new(spill_dir),
                }
            })
            .collect();
        Observed {
            processes,
            kernels: BTreeMap::new(),
            costs: Costs::default(),
        }
    }

    /// The figures of every record of `data`, read here (for a run no writer read).
    #[cfg(test)]
    pub fn read(data: &RunData) -> Observed {
        let mut observed = Observed::new(data, None);
        for (index, process) in data.processes.iter().enumerate() {
            for d in process.each_dispatch().map_while(Result::ok) {
                observed.dispatches(index, std::slice::from_ref(&d));
            }
            for c in process.each_cost().map_while(Result::ok) {
                observed.costs(index, std::slice::from_ref(&c));
            }
        }
        observed
    }

    /// The kernel durations of process `index` for the statistics (taken: asked once).
    pub fn take_durations(&mut self, index: usize) -> KernelDurations {
        std::mem::take(&mut self.processes[index].durations)
    }

    /// The counter names in the order the summary lists them: process by process, those it
    /// describes, then those its dispatches carry, each where first met.
    pub(super) fn counter_order(&self, data: &RunData) -> Vec<String> {
        let mut order: Vec<String> = Vec::new();
        for (process, seen) in data.processes.iter().zip(&self.processes) {
            let described = process.counters.iter().map(|c| &c.name);
            for name in described.chain(&seen.samples) {
                if !order.contains(name) {
                    order.push(name.clone());
                }
            }
        }
        order
    }

    /// Per (process index, agent): its dispatches, and outcome label -> count of its costs.
    pub(super) fn devices(&self) -> Vec<((usize, u64), Device<'_>)> {
        static NONE: BTreeMap<&str, usize> = BTreeMap::new();
        let mut devices = Vec::new();
        for (index, process) in self.processes.iter().enumerate() {
            for (agent, count) in &process.dispatches {
                let outcomes = process.outcomes.get(agent).unwrap_or(&NONE);
                devices.push(((index, *agent), (*count, outcomes)));
            }
        }
        devices
    }

    fn add_dispatch(&mut self, index: usize, d: &DispatchRecord) {
        let process = &mut self.processes[index];
        process.durations.add(&process.info, d);
        let first = usize::from(first_of_its_dispatch(d.replay_pass));
        *process.dispatches.entry(d.agent_id).or_default() += first;
        let name = process
            .names
            .entry(d.kernel_id)
            .or_insert_with(|| format!("kernel {}", d.kernel_id));
        let entry = match self.kernels.get_mut(name.as_str()) {
            Some(entry) => entry,
            None => self.kernels.entry(name.clone()).or_default(),
        };
        entry.0 += first;
        let pass = entry.1.entry(d.replay_pass).or_default();
        for sample in &d.counters {
            if !process.samples.iter().any(|seen| sample.name == *seen) {
                process.samples.push(sample.name.to_string());
            }
            match pass.get_mut(sample.name.as_str()) {
                Some(combined) => combined.add(sample.value),
                None => pass
                    .entry(sample.name.to_string())
                    .or_default()
                    .add(sample.value),
            }
        }
    }
}

impl RecordObserver for Observed {
    fn dispatches(&mut self, process: usize, records: &[DispatchRecord]) {
        for d in records {
            self.add_dispatch(process, d);
        }
    }

    fn costs(&mut self, process: usize, records: &[ReplayCost]) {
        for c in records {
            let outcomes = self.processes[process].outcomes.entry(c.agent_id);
            *outcomes
                .or_default()
                .entry(outcome_label(c.outcome))
                .or_default() += 1;
            self.costs.add(c);
        }
    }
}
