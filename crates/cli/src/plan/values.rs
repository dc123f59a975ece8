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
        && tokens.iter().all(|t| match t.split_once('-') {
            Some((a, b)) => match (a.parse::<u64>(), b.parse::<u64>()) {
                (Ok(a), Ok(b)) => a <= b,
                _ => false,
            },
            None => t.parse::<u64>().is_ok(),
        });
    if ok {
        Ok(())
    } else {
        Err(UsageError::new(format!(
            "{what} '{range}' is not an iteration range; write e.g. \"[1-2],[5]\" or 3"
        )))
    }
}
