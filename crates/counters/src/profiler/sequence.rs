//! How executions get their hardware pass's configuration ([`Sequence`], from
//! `KREPLAY_RANGE_PROFILER_SEQUENCE`).

use kreplay_core::config::ENV_SEQUENCE;
use kreplay_cuda::error::CudaError;

/// How executions get their hardware pass's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sequence {
    /// One image per schedule, CUPTI advancing the pass index: the default.
    Scheduled,
    /// One-pass images, `Disable` + `Enable` between them (≈ 160 ms per change, correct).
    Reenable,
    /// One-pass images switched with `SetConfig` alone: wrong on CUPTI 13.0, for the GPU
    /// check that proves the NaN check can fail.
    Switch,
}

impl Sequence {
    pub fn parse(text: &str) -> Option<Sequence> {
        match text.trim() {
            "" | "scheduled" => Some(Sequence::Scheduled),
            "reenable" => Some(Sequence::Reenable),
            "switch" => Some(Sequence::Switch),
            _ => None,
        }
    }

    /// The sequence `KREPLAY_RANGE_PROFILER_SEQUENCE` named (`text`, empty when unset); an
    /// unknown name is an error.
    pub fn from_switch(text: &str) -> Result<Sequence, CudaError> {
        Sequence::parse(text).ok_or_else(|| CudaError::Load(Sequence::unknown(text)))
    }

    /// What an unknown sequence name is told (the CLI says it before the application starts).
    pub fn unknown(text: &str) -> String {
        format!(
            "{ENV_SEQUENCE}={text:?} is not a range-profiler sequence; use scheduled (the default), reenable or switch"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_names_parse_and_default_to_scheduled() {
        assert_eq!(Sequence::parse(""), Some(Sequence::Scheduled));
        assert_eq!(Sequence::parse("scheduled"), Some(Sequence::Scheduled));
        assert_eq!(Sequence::parse("reenable"), Some(Sequence::Reenable));
        assert_eq!(Sequence::parse("switch"), Some(Sequence::Switch));
        assert_eq!(Sequence::parse("object-per-group"), None);
    }
}
