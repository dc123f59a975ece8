//! Option values checked one by one: formats, regular expressions, iteration ranges.

use crate::error::UsageError;
use crate::input::split_words;
use kreplay_format::OutputFormat;

/// `-f` values (words separated by spaces or commas, any case) as formats, each once.
pub fn check_formats(formats: &[String], what: &str) -> Result<Vec<OutputFormat>, UsageError> {
    let mut out: Vec<OutputFormat> = Vec::new();
    for f in formats.iter().flat_map(|f| split_words(f)) {
        let format: OutputFormat = f.parse().map_err(|_| {
            UsageError::new(format!(
                "{what}: output format '{f}' is not supported; use one or several of rocpd, csv, json, pftrace"
            ))
        })?;
        if !out.contains(&format) {
            out.push(format);
        }
    }
    Ok(out)
}

pub(super) fn check_regex(pattern: &str, what: &str) -> Result<(), UsageError> {
    regex::Regex::new(pattern).map(|_| ()).map_err(|e| {
        let detail = e.to_string();
        let detail = detail
            .lines()
            .last()
            .unwrap_or("invalid")
            .trim()
            .to_string();
        UsageError::new(format!(
            "{what} '{pattern}' is not a valid regular expression ({detail}); fix or quote it"
        ))
    })
}

/// rocprofv3's iteration range: split on "[], ", each token `A-B` or `N`.
pub(super) fn check_range(range: &str, what: &str) -> Result<(), UsageError> {
    let tokens: Vec<&str> = range
        .split(['[', ']', ',', ' '])
        .filter(|t| !t.is_empty())
        .collect();
    let ok = !tokens.is_empty()
        && tokens
            .iter()
            .all(|t| range_bounds(t).is_some_and(|(first, last)| first <= last));
    if !ok {
        return Err(UsageError::new(format!(
            "{what} '{range}' is not an iteration range; write e.g. \"[1-2],[5]\" or 3"
        )));
    }
    // Iterations count from 1 (the first dispatch of a kernel is its iteration 1, as in
    // rocprofv3): a range of iteration 0 only would profile nothing.
    if tokens.iter().all(|t| range_bounds(t) == Some((0, 0))) {
        return Err(UsageError::new(format!(
            "{what} '{range}' selects no dispatch: iterations count from 1 (a kernel's first dispatch is iteration 1); write [1] for the first, [1-3] for the first three"
        )));
    }
    Ok(())
}

/// A warning when a range names iteration 0, which never occurs (the rest of it still selects).
pub(super) fn range_warning(range: &str) -> Option<String> {
    range
        .split(['[', ']', ',', ' '])
        .filter(|t| !t.is_empty())
        .any(|t| range_bounds(t).is_some_and(|(first, _)| first == 0))
        .then(|| format!(
            "kreplay: warning: --kernel-iteration-range '{range}' names iteration 0, which never occurs: iterations count from 1 (a kernel's first dispatch is iteration 1)"
        ))
}

/// The first and last iteration of one range token (`A-B` or `N`).
fn range_bounds(token: &str) -> Option<(u64, u64)> {
    match token.split_once('-') {
        Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
        None => token.parse().ok().map(|n| (n, n)),
    }
}
