//! The short report printed after a run: per kernel, its dispatches and, per pass, the counters;
//! what replay cost; the warnings the run recorded.

use kreplay_format::{CacheState, ReplayCost, ReplayOutcome, RunData};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Kernels listed before the rest is summarised as a count.
const MAX_KERNELS: usize = 15;
const KERNEL_NAME_WIDTH: usize = 40;

/// Passes the summary names one by one; later ones are summed up in one figure.
const SHOWN_PASSES: usize = 8;

/// How one counter's values over several dispatches are combined for display, from the roll-up
/// suffix of the metric it was collected as (`metric`, not the requested name, which may be an
/// alias such as `OccupancyPercent`): maxima stay maxima, averages, ratios and rates are
/// averaged, the rest are summed.
fn combine(metric: &str, values: &[f64]) -> f64 {
    if metric.ends_with(".max") {
        values.iter().copied().fold(f64::MIN, f64::max)
    } else if metric.ends_with(".min") {
        values.iter().copied().fold(f64::MAX, f64::min)
    } else if [".avg", ".pct", ".ratio", ".per_"]
        .iter()
        .any(|part| metric.contains(part))
    {
        values.iter().sum::<f64>() / values.len().max(1) as f64
    } else {
        values.iter().sum()
    }
}

fn format_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
    }
}

fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
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

/// The report, one line per row; empty when nothing was recorded.
#[cfg(test)]
pub fn render(data: &RunData) -> String {
    render_with(data, true)
}

/// [`render`], saying where the warnings are to be read: above, when the log level printed them
/// as they happened (`warnings_printed`), else in the output files only.
pub fn render_with(data: &RunData, warnings_printed: bool) -> String {
    let mut out = String::new();
    render_kernels(data, &mut out);
    render_devices(data, &mut out);
    render_costs(data, &mut out);
    render_warnings(data, warnings_printed, &mut out);
    out
}

/// The dispatch count, and each kernel's counters per pass, combined over its dispatches.
fn render_kernels(data: &RunData, out: &mut String) {
    // kernel name -> (dispatch identities, pass -> counter -> values)
    type PerPass = BTreeMap<Option<u32>, BTreeMap<String, Vec<f64>>>;
    let mut kernels: BTreeMap<String, (BTreeSet<(u32, u64)>, PerPass)> = BTreeMap::new();
    let mut counter_order: Vec<String> = Vec::new();
    // Requested name -> the metric it was collected as (names without a description are metrics).
    let mut metric_of: BTreeMap<&str, &str> = BTreeMap::new();
    for process in &data.processes {
        for c in &process.counters {
            if !counter_order.contains(&c.name) {
                counter_order.push(c.name.clone());
            }
            metric_of.insert(&c.name, &c.metric);
        }
        for d in &process.dispatches {
            let name = process
                .kernel(d.kernel_id)
                .map(|k| k.demangled_name.clone())
                .unwrap_or_else(|| format!("kernel {}", d.kernel_id));
            let entry = kernels.entry(name).or_default();
            entry.0.insert((d.pid, d.dispatch_id));
            let pass = entry.1.entry(d.replay_pass).or_default();
            for sample in &d.counters {
                if !counter_order.contains(&sample.name) {
                    counter_order.push(sample.name.clone());
                }
                pass.entry(sample.name.clone())
                    .or_default()
                    .push(sample.value);
            }
        }
    }
    let dispatches: usize = kernels.values().map(|(ids, _)| ids.len()).sum();
    let _ = writeln!(
        out,
        "kreplay: {dispatches} dispatch(es) of {} kernel(s) in {} process(es)",
        kernels.len(),
        data.processes.len()
    );
    let mut rows: Vec<_> = kernels.iter().collect();
    rows.sort_by(|a, b| b.1 .0.len().cmp(&a.1 .0.len()).then(a.0.cmp(b.0)));
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
    for (name, (ids, passes)) in rows.iter().take(MAX_KERNELS) {
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
                    format!("{n}={}", format_value(combine(metric, &counters[*n])))
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
                (truncate(name), ids.len().to_string())
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
fn render_devices(data: &RunData, out: &mut String) {
    // (process index, agent) -> (dispatch ids, outcome label -> count)
    type Seen = (BTreeSet<u64>, BTreeMap<&'static str, usize>);
    let mut devices: BTreeMap<(usize, u64), Seen> = BTreeMap::new();
    for (index, process) in data.processes.iter().enumerate() {
        for d in &process.dispatches {
            devices
                .entry((index, d.agent_id))
                .or_default()
                .0
                .insert(d.dispatch_id);
        }
        for c in &process.costs {
            if let Some(device) = devices.get_mut(&(index, c.agent_id)) {
                *device.1.entry(outcome_label(c.outcome)).or_default() += 1;
            }
        }
    }
    if devices.len() < 2 {
        return;
    }
    let _ = writeln!(out, "kreplay: per device:");
    for ((index, agent), (ids, outcomes)) in &devices {
        let process = &data.processes[*index];
        let rank = process
            .process
            .rank
            .as_deref()
            .map(|r| format!(" (rank {r})"))
            .unwrap_or_default();
        let device = process
            .agents
            .iter()
            .find(|a| a.agent_id == *agent)
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
            ids.len(),
            if outcomes.is_empty() {
                String::new()
            } else {
                format!(": {}", outcomes.join(", "))
            }
        );
    }
}

/// What replay did and cost (only for runs that have cost records).
fn render_costs(data: &RunData, out: &mut String) {
    let costs: Vec<_> = data.processes.iter().flat_map(|p| &p.costs).collect();
    if !costs.is_empty() {
        let mut outcomes: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut pass_ns: Vec<(u64, u64)> = Vec::new(); // (total ns, count) per pass index
        let (mut snap, mut restored, mut snap_ns, mut restore_ns) = (0u64, 0u64, 0u64, 0u64);
        let mut timing_ns = 0u64;
        for c in &costs {
            *outcomes.entry(outcome_label(c.outcome)).or_default() += 1;
            snap += c.bytes_snapshotted;
            restored += c.bytes_restored;
            snap_ns += c.snapshot_ns;
            restore_ns += c.restore_ns;
            timing_ns += c.timing_execution_ns;
            for (i, ns) in c.pass_ns.iter().enumerate() {
                if pass_ns.len() <= i {
                    pass_ns.resize(i + 1, (0, 0));
                }
                pass_ns[i].0 += ns;
                pass_ns[i].1 += 1;
            }
        }
        let outcome_text = outcomes
            .iter()
            .map(|(label, n)| format!("{n} {label}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(out, "kreplay: replay: {outcome_text}");
        let mean_ms = |(total, n): &(u64, u64)| *total as f64 / (*n).max(1) as f64 / 1e6;
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
        let timing = if timing_ns > 0 {
            format!(", timing executions {:.3} ms", timing_ns as f64 / 1e6)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "kreplay: replay cost: {} snapshotted ({:.3} ms), {} restored ({:.3} ms){timing}; mean time per pass: {}",
            format_bytes(snap),
            snap_ns as f64 / 1e6,
            format_bytes(restored),
            restore_ns as f64 / 1e6,
            if per_pass.is_empty() { "-".to_string() } else { per_pass }
        );
        let _ = writeln!(out, "kreplay: {}", caches_and_clocks(data, &costs));
    }
}

/// The cache state the dispatches were measured from and the clocks seen, in one line.
fn caches_and_clocks(data: &RunData, costs: &[&ReplayCost]) -> String {
    let controls: BTreeSet<&str> = data
        .processes
        .iter()
        .map(|p| p.process.cache_control.as_str())
        .collect();
    let flushed = costs
        .iter()
        .filter(|c| c.cache == CacheState::Flushed)
        .count();
    let mut line = format!(
        "caches (--cache-control {}): {flushed} dispatch(es) measured from a flushed L2, {} with the caches as the work before left them",
        controls.into_iter().collect::<Vec<_>>().join("/"),
        costs.len() - flushed
    );
    let range = |pick: fn(&ReplayCost) -> [u32; 2]| {
        let read: Vec<[u32; 2]> = costs.iter().map(|c| pick(c)).filter(|r| r[1] > 0).collect();
        let low = read.iter().map(|r| r[0]).min()?;
        let high = read.iter().map(|r| r[1]).max()?;
        Some(if low == high {
            format!("{high} MHz")
        } else {
            format!("{low}-{high} MHz")
        })
    };
    match (range(|c| c.sm_clock_mhz), range(|c| c.memory_clock_mhz)) {
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
