//! Why a counter group cannot be collected as one pass, and how the CLI spells a split.

use crate::catalog::metric::CatalogError;

/// Why a counter group cannot be collected as one kernel-replay pass.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// An unknown metric (with suggestions), or a catalog that could not answer.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("empty counter group: each --pmc must name at least one counter")]
    Empty,
    /// The group needs several hardware passes; `split` is a grouping where each fits one.
    #[error(
        "counter group '{}' needs {passes} hardware passes on {chip}, but each group must fit one pass; split it, e.g. {}",
        .metrics.join(" "),
        pmc_flags(.split)
    )]
    TooManyPasses {
        metrics: Vec<String>,
        passes: u32,
        chip: String,
        split: Vec<Vec<String>>,
    },
    /// One metric alone needs several passes: no grouping can make it fit one.
    #[error(
        "metric '{metric}' alone needs {passes} hardware passes on {chip}, and each counter group must fit one pass; \
         choose metrics that fit one pass (check with `kreplay avail pmc-check --chip {chip} NAME`)"
    )]
    MetricNeedsPasses {
        metric: String,
        passes: u32,
        chip: String,
    },
}

/// `--pmc a b --pmc c`: how a user writes a split on the command line.
pub fn pmc_flags(groups: &[Vec<String>]) -> String {
    groups
        .iter()
        .map(|group| format!("--pmc {}", group.join(" ")))
        .collect::<Vec<_>>()
        .join(" ")
}
