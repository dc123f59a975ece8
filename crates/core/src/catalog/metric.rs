//! The catalog's interface: what a device's metric catalog answers, and its errors.

/// What `kreplay avail info` prints of a metric.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricDescription {
    pub name: String,
    pub description: String,
    /// The hardware unit that counts it (e.g. `sm`, `dram`, `lts`).
    pub hw_unit: String,
    /// The unit of its values (e.g. `warp`, `byte`, `cycle`).
    pub unit: String,
    /// Counter, ratio or throughput.
    pub metric_type: String,
    /// Roll-ups and sub-metrics the base name accepts (e.g. `.sum`, `.avg`, `.max`, `.per_second`).
    pub sub_metrics: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// A name the catalog does not know; `suggestions` are the closest known names.
    #[error("unknown metric '{name}' on {chip}{}", suggestion_text(.suggestions))]
    UnknownMetric {
        name: String,
        chip: String,
        suggestions: Vec<String>,
    },
    /// The library or the chip could not answer.
    #[error("{0}")]
    Unavailable(String),
    /// The device's counters are held by another process (another profiler): the message says
    /// so and that one process per device can profile at a time.
    #[error("{0}")]
    CountersBusy(String),
}

fn suggestion_text(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        "; list the known metrics with `kreplay avail list`".to_string()
    } else {
        format!("; did you mean {}?", suggestions.join(", "))
    }
}

pub trait MetricCatalog {
    /// The chip the catalog describes, upper case (`GH100`, `SIM`).
    fn chip(&self) -> &str;
    /// Every collectable metric name (base metrics with their usual roll-ups, as the catalog lists them).
    fn metric_names(&self) -> Result<Vec<String>, CatalogError>;
    /// One metric's description; unknown names are [`CatalogError::UnknownMetric`].
    fn describe(&self, metric: &str) -> Result<MetricDescription, CatalogError>;
    /// Hardware passes needed to collect `metrics` together (1 = they fit one pass).
    fn passes(&self, metrics: &[&str]) -> Result<u32, CatalogError>;
}
