//! Counter groups of the command line's `--metrics` and of input-file jobs, through the resolver;
//! its errors said with where the names came from.

use super::resolver::CounterResolver;
use crate::error::UsageError;
use crate::input::Job;
use kreplay_core::config::{CounterGroup, InProcessMode};

/// `--metrics` (and the metrics of the sections) packed into groups (single-pass groups, and
/// metrics that need several hardware passes), and the notice that says how.
pub(super) fn metrics_groups(
    metrics: &[String],
    resolver: &dyn CounterResolver,
    replay: bool,
) -> anyhow::Result<(Vec<CounterGroup>, String)> {
    let packed = resolver
        .pack(metrics, replay)
        .map_err(|e| counter_error(e, None))?;
    let spanning: Vec<String> = packed
        .iter()
        .filter(|(_, passes)| *passes > 1)
        .map(|(g, passes)| {
            format!(
                "{} ({passes} passes)",
                g.metrics().collect::<Vec<_>>().join(" ")
            )
        })
        .collect();
    if !spanning.is_empty() && !replay {
        return Err(UsageError::new(format!(
            "--metrics {} needs several hardware passes on its own; kernel replay measures it by running each dispatch that many times: add --replay-mode kernel --kernel-replay-beta-enabled",
            spanning.join(", ")
        ))
        .into());
    }
    let single: Vec<&CounterGroup> = packed
        .iter()
        .filter(|(_, passes)| *passes <= 1)
        .map(|(g, _)| g)
        .collect();
    let mut notice = format!(
        "kreplay: --metrics packed into {} single-pass group(s): {}",
        single.len(),
        single
            .iter()
            .map(|g| format!("--pmc {}", g.metrics().collect::<Vec<_>>().join(" ")))
            .collect::<Vec<_>>()
            .join(" ")
    );
    if !spanning.is_empty() {
        notice += &format!(
            "; measured over several replay passes each: {}",
            spanning.join(", ")
        );
    }
    Ok((packed.into_iter().map(|(g, _)| g).collect(), notice))
}

/// A catalog error as one line, prefixed with where the counters came from. Usage errors (an
/// unknown name, a group that needs several passes) stay usage errors; others (no GPU to ask)
/// are errors of the machine and keep their kind.
pub(super) fn counter_error(error: anyhow::Error, origin: Option<&str>) -> anyhow::Error {
    let line = format!("{error:#}").replace('\n', " ");
    let line = match origin {
        Some(origin) => format!("{origin}: {line}"),
        None => line,
    };
    if error.downcast_ref::<UsageError>().is_some() {
        UsageError::new(line).into()
    } else {
        anyhow::anyhow!(line)
    }
}

pub(super) fn job_groups(
    job: &Job,
    origin: &str,
    replay: bool,
    resolver: &dyn CounterResolver,
) -> anyhow::Result<(Vec<CounterGroup>, InProcessMode)> {
    let names: Vec<Vec<String>> = match (&job.pmc, &job.pmc_groups) {
        (Some(_), Some(_)) => {
            return Err(UsageError::new(format!(
                "{origin} has both pmc and pmc_groups; give one of them"
            ))
            .into())
        }
        (Some(pmc), None) => {
            let words = pmc.words();
            if words.is_empty() {
                return Err(UsageError::new(format!(
                    "{origin} has an empty pmc list; name at least one counter or remove the key"
                ))
                .into());
            }
            vec![words]
        }
        (None, Some(groups)) => {
            let groups: Vec<Vec<String>> = groups.iter().map(|g| g.words()).collect();
            if groups.is_empty() {
                return Err(UsageError::new(format!(
                    "{origin} has an empty pmc_groups list; give at least one group"
                ))
                .into());
            }
            if let Some(i) = groups.iter().position(Vec::is_empty) {
                return Err(UsageError::new(format!(
                    "{origin}: pmc_groups entry {} is empty; each group needs at least one counter",
                    i + 1
                ))
                .into());
            }
            groups
        }
        (None, None) => Vec::new(),
    };
    let resolved = if names.is_empty() {
        Vec::new()
    } else {
        resolver
            .resolve_groups(&names)
            .map_err(|e| counter_error(e, Some(origin)))?
    };
    let mode = if resolved.is_empty() {
        InProcessMode::Single
    } else if replay {
        // Under replay the interval is ignored: every group runs on every dispatch.
        InProcessMode::KernelReplay
    } else if job.pmc_groups.is_some() {
        match job.pmc_group_interval {
            Some(interval) if interval > 0 => InProcessMode::Rotation { interval },
            Some(_) => {
                return Err(UsageError::new(format!(
                    "{origin}: pmc_group_interval must be at least 1 (dispatches per group)"
                )).into())
            }
            None => {
                return Err(UsageError::new(format!(
                    "{origin}: pmc_groups needs pmc_group_interval (dispatches per group), or run with --replay-mode kernel --kernel-replay-beta-enabled to collect every group on every dispatch"
                )).into())
            }
        }
    } else {
        InProcessMode::Single
    };
    Ok((resolved, mode))
}

/// A warning for every group that repeats an earlier one (the same counters, in any order),
/// each named `what` and its number: a counter repeated across groups is legitimate
/// (rocprofv3's own tests do it), a whole group repeated collects the same values twice and is
/// almost certainly a mistake.
pub(super) fn repeated_groups(groups: &[Vec<String>], what: &str) -> Vec<String> {
    let sorted: Vec<Vec<&String>> = groups
        .iter()
        .map(|g| {
            let mut names: Vec<&String> = g.iter().collect();
            names.sort();
            names.dedup();
            names
        })
        .collect();
    (0..sorted.len())
        .filter_map(|i| {
            let first = sorted[..i].iter().position(|earlier| *earlier == sorted[i])?;
            Some(format!(
                "kreplay: warning: {what} {} ({}) is the same as {what} {}: its counters would be collected twice, with the same values; remove one of them",
                i + 1,
                groups[i].join(" "),
                first + 1
            ))
        })
        .collect()
}
