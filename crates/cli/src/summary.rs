//! The short report printed after a run: per kernel, its dispatches and, per pass, the counters;
//! what replay cost; the warnings the run recorded.

use kreplay_format::run::Watcher;
use kreplay_format::{format_bytes, CacheState, ReplayCost, ReplayOutcome, RunData};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

mod observed;

pub use observed::Observed;

/// Kernels listed before the rest is summarised as a count.
const MAX_KERNELS: usize = 15;
const KERNEL_NAME_WIDTH: usize = 40;

/// Passes the summary names one by one; later ones are summed up in one figure.
const SHOWN_PASSES: usize = 8;

/// One counter's values over a kernel's dispatches (one pass), accumulated as they are read.
#[derive(Clone, Copy)]
struct Combined {
    count: usize,
    sum: f64,
    min: f64,
    max: f64,
}

impl Default for Combined {
    fn default() -> Combined {
        Combined {
            count: 0,
            // What summing no value gives, so that a sum is the one `Iterator::sum` makes.
            sum: std::iter::empty::<f64>().sum(),
            min: f64::MAX,
            max: f64::MIN,
        }
    }
}

impl Combined {
    fn add(&mut self, value: f64) {
        self.count += 1;
        self.sum += value;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// The values combined for display, from the roll-up suffix of the metric they were
    /// collected as (`metric`, not the requested name, which may be an alias such as
    /// `OccupancyPercent`): maxima stay maxima, averages, ratios and rates are averaged, the
    /// rest are summed.
    fn combined(&self, metric: &str) -> f64 {
        if metric.ends_with(".max") {
            self.max
        } else if metric.ends_with(".min") {
            self.min
        } else if [".avg", ".pct", ".ratio", ".per_"]
            .iter()
            .any(|part| metric.contains(part))
        {
            self.sum / self.count.max(1) as f64
        } else {
            self.sum
        }
    }
}

/// How one counter's values over several dispatches are combined for display
/// ([`Combined::combined`]).
#[cfg(test)]
fn combine(metric: &str, values: &[f64]) -> f64 {
    let mut combined = Combined::default();
    for value in values {
        combined.add(*value);
    }
    combined.combined(metric)
}

/// Whether a record is its dispatch's first: the application's own launch (pass 0), or the one
/// record of a dispatch that ran once. Counting these counts each dispatch once while reading
/// the records in one pass, holding none of them.
fn first_of_its_dispatch(pass: Option<u32>) -> bool {
    pass.unwrap_or(0) == 0
}

fn format_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
    }
}

fn outcome_label(outcome: ReplayOutcome) -> &'static str {
    match outcome {
        ReplayOutcome::Replayed => "replayed",
        ReplayOutcome::SinglePass => "single pass (no snapshot)",
        ReplayOutcome::StoppedEarly => "stopped early",
        ReplayOutcome::DeclinedGraphLaunch => "not replayed: graph launch",
        ReplayOutcome::DeclinedStreamCapture => "not replayed: stream capture",
        ReplayOutcome::DeclinedMultiDevice => "not replayed: multi-device launch",
        ReplayOutcome::DeclinedDevicePrintf => "not replayed: kernel calls printf",
        ReplayOutcome::DeclinedDeviceHeap => "not replayed: kernel uses the device heap",
        ReplayOutcome::DeclinedCollective => "not replayed: collective (NCCL/NVSHMEM) kernel",
        ReplayOutcome::DeclinedPageableHost => "not replayed: reaches pageable host memory",
        ReplayOutcome::DeclinedPeerMemory => "not replayed: reaches another GPU's memory",
        ReplayOutcome::DeclinedSnapshotTooLarge => "not replayed: snapshot too large",
        ReplayOutcome::DeclinedError => "not replayed: error",
        ReplayOutcome::Filtered => "filtered out",
    }
}

fn truncate(name: &str) -> String {
    if name.chars().count() <= KERNEL_NAME_WIDTH {
        name.to_string()
    } else {
        let head: String = name.chars().take(KERNEL_NAME_WIDTH - 3).collect();
        format!("{head}...")
    }
}

/// The report, one line per row, reading the records here; empty when nothing was recorded.
#[cfg(test)]
pub fn render(data: &RunData) -> String {
    render_observed(data, &Observed::read(data), true)
}

/// The report of `data` from what its records gave as the writers read them
/// ([`Watcher::complete`] first reads what they did not), saying where the warnings are to be
/// read: above, when the log level printed them as they happened (`warnings_printed`), else in
/// the output files only.
pub fn render_with(data: &RunData, observed: &Watcher<Observed>, warnings_printed: bool) -> String {
    observed.complete(data);
    render_observed(data, &observed.observer(), warnings_printed)
}

fn render_observed(data: &RunData, observed: &Observed, warnings_printed: bool) -> String {
    let mut out = String::new();
    render_kernels(data, observed, &mut out);
    render_devices(data, observed, &mut out);
    render_costs(data, &observed.costs, &mut out);
    render_warnings(data, warnings_printed, &mut out);
    out
}

/// The dispatch count, and each kernel's counters per pass, combined over its dispatches.
fn render_kernels(data: &RunData, observed: &Observed, out: &mut String) {
    let kernels = &observed.kernels;
    let counter_order = observed.counter_order(data);
    // Requested name -> the metric it was collected as (names without a description are
    // metrics).
    let metric_of: BTreeMap<&str, &str> = (data.processes.iter())
        .flat_map(|p| &p.counters)
        .map(|c| (c.name.as_str(), c.metric.as_str()))
        .collect();
    let dispatches: usize = kernels.values().map(|(count, _)| count).sum();
    let _ = writeln!(
        out,
        "kreplay: {dispatches} dispatch(es) of {} kernel(s) in {} process(es)",
        kernels.len(),
        data.processes.len()
    );
    let mut rows: Vec<_> = kernels.iter().collect();
    rows.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    if !rows.is_empty() {
        let _ = writeln!(
            out,
            "  {:<w$}  {:>10}  {:>4}  counters (over the kernel's dispatches)",
            "kernel",
            "dispatches",
            "pass",
            w = KERNEL_NAME_WIDTH
        );
    }
    for (name, (count, passes)) in rows.iter().take(MAX_KERNELS) {
        for (i, (pass, counters)) in passes.iter().enumerate() {
            let mut names: Vec<&String> = counters.keys().collect();
            names.sort_by_key(|n| {
                counter_order
                    .iter()
                    .position(|c| c == *n)
                    .unwrap_or(usize::MAX)
            });
            let values = names
                .iter()
                .map(|n| {
                    let metric = metric_of.get(n.as_str()).copied().unwrap_or(n);
                    format!("{n}={}", format_value(counters[*n].combined(metric)))
                })
                .collect::<Vec<_>>()
                .join("  ");
            // A dispatch of a replay run that ran once (declined) shows as "once".
            let pass_text = match pass {
                Some(p) => p.to_string(),
                None if passes.keys().any(Option::is_some) => "once".into(),
                None => "-".into(),
            };
            // The kernel's name and dispatch count on its first pass's line only.
            let (shown, count) = if i == 0 {
                (truncate(name), count.to_string())
            } else {
                (String::new(), String::new())
            };
            let _ = writeln!(
                out,
                "  {shown:<w$}  {count:>10}  {pass_text:>4}  {values}",
                w = KERNEL_NAME_WIDTH
            );
        }
    }
    if rows.len() > MAX_KERNELS {
        let _ = writeln!(
            out,
            "  ... and {} more kernel(s); see the output files",
            rows.len() - MAX_KERNELS
        );
    }
}

/// With dispatches on more than one device (several GPUs of a process, or several processes):
/// per device, its dispatches and what replay did with them.
fn render_devices(data: &RunData, observed: &Observed, out: &mut String) {
    let devices = observed.devices();
    if devices.len() < 2 {
        return;
    }
    let _ = writeln!(out, "kreplay: per device:");
    for ((index, agent), (count, outcomes)) in devices {
        let process = &data.processes[index];
        let rank = process
            .process
            .rank
            .as_deref()
            .map(|r| format!(" (rank {r})"))
            .unwrap_or_default();
        let device = process
            .agents
            .iter()
            .find(|a| a.agent_id == agent)
            .map(|a| format!(" ({}, {})", a.name, a.chip))
            .unwrap_or_default();
        let outcomes: Vec<String> = outcomes
            .iter()
            .map(|(label, n)| format!("{n} {label}"))
            .collect();
        let _ = writeln!(
            out,
            "  process {}{rank}, GPU {agent}{device}: {} dispatch(es){}",
            process.process.pid,
            count,
            if outcomes.is_empty() {
                String::new()
            } else {
                format!(": {}", outcomes.join(", "))
            }
        );
    }
}

/// What replay did and cost, summed over the cost records as they are read.
#[derive(Default)]
struct Costs {
    records: usize,
    outcomes: BTreeMap<&'static str, usize>,
    /// (total ns, count) per pass index.
    pass_ns: Vec<(u64, u64)>,
    snapshotted: (u64, u64),
    restored: (u64, u64),
    timing_ns: u64,
    flushed: usize,
    /// The lowest and highest SM and memory clocks read (`[low, high]`, high > 0).
    sm_clock: Option<[u32; 2]>,
    memory_clock: Option<[u32; 2]>,
}

impl Costs {
    fn add(&mut self, c: &ReplayCost) {
        self.records += 1;
        *self.outcomes.entry(outcome_label(c.outcome)).or_default() += 1;
        self.snapshotted.0 += c.bytes_snapshotted;
        self.snapshotted.1 += c.snapshot_ns;
        self.restored.0 += c.bytes_restored;
        self.restored.1 += c.restore_ns;
        self.timing_ns += c.timing_execution_ns;
        for (i, ns) in c.pass_ns.iter().enumerate() {
            if self.pass_ns.len() <= i {
                self.pass_ns.resize(i + 1, (0, 0));
            }
            self.pass_ns[i].0 += ns;
            self.pass_ns[i].1 += 1;
        }
        self.flushed += usize::from(c.cache == CacheState::Flushed);
        let widen = |range: &mut Option<[u32; 2]>, read: [u32; 2]| {
            if read[1] > 0 {
                let [low, high] = range.get_or_insert(read);
                *low = (*low).min(read[0]);
                *high = (*high).max(read[1]);
            }
        };
        widen(&mut self.sm_clock, c.sm_clock_mhz);
        widen(&mut self.memory_clock, c.memory_clock_mhz);
    }
}

/// What replay did and cost (only for runs that have cost records).
fn render_costs(data: &RunData, costs: &Costs, out: &mut String) {
    if costs.records == 0 {
        return;
    }
    let outcome_text = costs
        .outcomes
        .iter()
        .map(|(label, n)| format!("{n} {label}"))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(out, "kreplay: replay: {outcome_text}");
    let mean_ms = |(total, n): &(u64, u64)| *total as f64 / (*n).max(1) as f64 / 1e6;
    let pass_ns = &costs.pass_ns;
    let mut per_pass = pass_ns
        .iter()
        .take(SHOWN_PASSES)
        .enumerate()
        .map(|(i, pass)| format!("pass {i} {:.3} ms", mean_ms(pass)))
        .collect::<Vec<_>>()
        .join(", ");
    if let Some(rest) = pass_ns.get(SHOWN_PASSES..).filter(|r| !r.is_empty()) {
        let mean = rest.iter().map(mean_ms).sum::<f64>() / rest.len() as f64;
        per_pass += &format!(
            ", passes {SHOWN_PASSES}-{} {mean:.3} ms on average",
            pass_ns.len() - 1
        );
    }
    let timing = if costs.timing_ns > 0 {
        format!(", timing executions {:.3} ms", costs.timing_ns as f64 / 1e6)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "kreplay: replay cost: {} snapshotted ({:.3} ms), {} restored ({:.3} ms){timing}; mean time per pass: {}",
        format_bytes(costs.snapshotted.0),
        costs.snapshotted.1 as f64 / 1e6,
        format_bytes(costs.restored.0),
        costs.restored.1 as f64 / 1e6,
        if per_pass.is_empty() { "-".to_string() } else { per_pass }
    );
    let _ = writeln!(out, "kreplay: {}", caches_and_clocks(data, costs));
}

/// The cache state the dispatches were measured from and the clocks seen, in one line.
fn caches_and_clocks(data: &RunData, costs: &Costs) -> String {
    let controls: BTreeSet<&str> = data
        .processes
        .iter()
        .map(|p| p.process.cache_control.as_str())
        .collect();
    let flushed = costs.flushed;
    let mut line = format!(
        "caches (--cache-control {}): {flushed} dispatch(es) measured from a flushed L2, {} with the caches as the work before left them",
        controls.into_iter().collect::<Vec<_>>().join("/"),
        costs.records - flushed
    );
    let range = |read: Option<[u32; 2]>| {
        let [low, high] = read?;
        Some(if low == high {
            format!("{high} MHz")
        } else {
            format!("{low}-{high} MHz")
        })
    };
    match (range(costs.sm_clock), range(costs.memory_clock)) {
        (Some(sm), Some(memory)) => {
            line += &format!("; clocks seen: SM {sm}, memory {memory} (kreplay never changes them)")
        }
        _ => line += "; clocks not read",
    }
    line
}

fn render_warnings(data: &RunData, printed: bool, out: &mut String) {
    // The tool printed each warning when it happened (once per process); repeating them here
    // would only double the noise, so the summary counts them and says where they are kept.
    let distinct: BTreeSet<&str> = data
        .processes
        .iter()
        .flat_map(|p| &p.warnings)
        .map(|w| w.message.as_str())
        .collect();
    if !distinct.is_empty() {
        let place = if printed {
            "printed above as they happened; kept in the output files"
        } else {
            "kept in the output files; not printed at this --log-level"
        };
        let _ = writeln!(
            out,
            "kreplay: {} distinct warning(s) recorded ({place})",
            distinct.len()
        );
    }
}

#[cfg(test)]
mod tests;
