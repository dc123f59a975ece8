//! Which dispatches are profiled: `--kernel-include-regex`, `--kernel-exclude-regex` and
//! `--kernel-iteration-range`, with rocprofv3's semantics.
//!
//! - The regexes are searched (not anchored) in the demangled kernel name; include first
//!   (default: everything), then exclude.
//! - The iteration range is parsed as rocprofv3's tool does: the text is split on `[`, `]`, `,`
//!   and spaces; each token is `A-B` (inclusive) or `N`; anything else is an error.
//! - Iterations count **from 1**, per kernel name, over the dispatches that pass the regexes:
//!   the first dispatch of a kernel is iteration 1. rocprofiler-sdk's tool starts its per-kernel
//!   counter at 1 on the first dispatch (`is_targeted_kernel` in `rocprofiler-sdk-tool/tool.cpp`)
//!   and rocprof-compute documents the same ("dispatch indexing is inclusive and starts from 1").
//!   So `"[1-2]"` profiles the first two dispatches of every kernel, and `0` matches nothing.
//!
//! Before them come the selected regions ([`regions`], collection between the application's
//! profiler start and stop calls) and the NVTX filters ([`nvtx`]): a dispatch is profiled when
//! it is launched in a selected region, inside the NVTX ranges the filters ask for, and its
//! name passes the regexes; the iteration range then counts, per kernel name, only the
//! dispatches that passed all of them (as Nsight Compute's `--launch-skip`/`--launch-count`
//! count only launches that match its filters, NVTX ones included).

pub mod nvtx;
pub mod regions;

use crate::config::KernelFilter;
use nvtx::{NvtxError, NvtxFilter};
use regex::Regex;
use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("--kernel-include-regex {pattern:?} is not a valid regular expression ({reason}); fix the pattern")]
    BadIncludeRegex { pattern: String, reason: String },
    #[error("--kernel-exclude-regex {pattern:?} is not a valid regular expression ({reason}); fix the pattern")]
    BadExcludeRegex { pattern: String, reason: String },
    #[error("--kernel-iteration-range {text:?}: {token:?} is not an iteration; use N or A-B, e.g. \"[1-2],[5]\"")]
    BadIterationToken { text: String, token: String },
    #[error("--kernel-iteration-range {text:?}: range {token:?} ends before it starts; write it as A-B with A <= B")]
    ReversedIterationRange { text: String, token: String },
    #[error(transparent)]
    Nvtx(#[from] NvtxError),
}

/// A set of 1-based kernel iterations, as inclusive ranges.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IterationRange {
    /// Inclusive `(first, last)` pairs, in the order given.
    ranges: Vec<(u64, u64)>,
}

impl IterationRange {
    /// Parses rocprofv3's syntax. An empty text (or only separators) is the empty set, which
    /// [`KernelSelector`] treats as "no range given": every iteration.
    pub fn parse(text: &str) -> Result<Self, FilterError> {
        let mut ranges = Vec::new();
        for token in text
            .split(['[', ']', ',', ' ', '\t', '\n'])
            .filter(|t| !t.is_empty())
        {
            let bad = || FilterError::BadIterationToken {
                text: text.to_string(),
                token: token.to_string(),
            };
            let number = |s: &str| -> Result<u64, FilterError> {
                if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                s.parse().map_err(|_| bad())
            };
            let (first, last) = match token.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None => {
                    let n = number(token)?;
                    (n, n)
                }
            };
            if first > last {
                return Err(FilterError::ReversedIterationRange {
                    text: text.to_string(),
                    token: token.to_string(),
                });
            }
            ranges.push((first, last));
        }
        Ok(IterationRange { ranges })
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn contains(&self, iteration: u64) -> bool {
        self.ranges
            .iter()
            .any(|&(first, last)| first <= iteration && iteration <= last)
    }
}

/// The compiled kernel filter, with the per-kernel iteration counters it needs.
#[derive(Debug)]
pub struct KernelSelector {
    include: Option<Regex>,
    exclude: Option<Regex>,
    range: IterationRange,
    nvtx: Option<NvtxFilter>,
    /// Dispatches seen so far per kernel name, among those passing the regexes.
    iterations: Mutex<HashMap<String, u64>>,
}

impl KernelSelector {
    /// Compiles `filter`; the CLI calls this before starting the application so that a bad
    /// pattern is a usage error, not a failure inside the app.
    pub fn new(filter: &KernelFilter) -> Result<Self, FilterError> {
        let include = match filter.include_regex.as_deref() {
            Some(p) if !p.is_empty() => {
                Some(Regex::new(p).map_err(|e| FilterError::BadIncludeRegex {
                    pattern: p.to_string(),
                    reason: first_line(&e.to_string()),
                })?)
            }
            _ => None,
        };
        let exclude = match filter.exclude_regex.as_deref() {
            Some(p) if !p.is_empty() => {
                Some(Regex::new(p).map_err(|e| FilterError::BadExcludeRegex {
                    pattern: p.to_string(),
                    reason: first_line(&e.to_string()),
                })?)
            }
            _ => None,
        };
        let range = match filter.iteration_range.as_deref() {
            Some(text) => IterationRange::parse(text)?,
            None => IterationRange::default(),
        };
        let nvtx = NvtxFilter::new(&filter.nvtx_include, &filter.nvtx_exclude)?;
        Ok(KernelSelector {
            include,
            exclude,
            range,
            nvtx,
            iterations: Mutex::new(HashMap::new()),
        })
    }

    /// The NVTX filters, when any is given: the caller decides a launch's NVTX state with
    /// them before [`KernelSelector::select`].
    pub fn nvtx(&self) -> Option<&NvtxFilter> {
        self.nvtx.as_ref()
    }

    /// Whether the regexes keep a kernel name (no counting).
    pub fn name_selected(&self, name: &str) -> bool {
        !matches!(&self.include, Some(re) if !re.is_match(name))
            && !self.exclude.as_ref().is_some_and(|re| re.is_match(name))
    }

    /// Decides one dispatch of `name`, counting it as the kernel's next iteration when the
    /// regexes keep it. Call exactly once per executed dispatch that the selected regions and
    /// the NVTX filters keep.
    pub fn select(&self, name: &str) -> bool {
        if !self.name_selected(name) {
            return false;
        }
        if self.range.is_empty() {
            return true;
        }
        let iteration = {
            let mut iterations = self.iterations.lock().unwrap_or_else(|e| e.into_inner());
            let count = iterations.entry(name.to_string()).or_insert(0);
            *count += 1;
            *count
        };
        self.range.contains(iteration)
    }
}

fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
