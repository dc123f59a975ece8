//! The marker domain's record (`--marker-trace`): one NVTX range or mark of the application, as
//! rocprofv3 records ROCTx ranges and marks (`MARKER_CORE_RANGE_API`).
//!
//! A range is recorded once, complete, when it ends (a pop, a range end); a mark when it is
//! made. The database keeps ranges as `rocpd_region` rows and marks as `rocpd_sample` rows (as
//! rocprofv3 does: a record whose start equals its end is a sample), each with a `rocpd_event`
//! whose `extdata` holds the message, the NVTX domain and category, written in the order they
//! were recorded (row ids increase), so that a reader takes them in that order.

use serde::{Deserialize, Serialize};

/// rocprofv3's category (buffer-tracing kind name) of marker records: its `Domain` column in
/// `marker_api_trace.csv` and the `category` of rocpd's `regions` and `samples` views.
pub const MARKER_CATEGORY: &str = "MARKER_CORE_RANGE_API";

/// What kind of marker a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkerKind {
    /// A push/pop range: nested per thread (rocprofv3's `roctxThreadRangeA`).
    PushPop,
    /// A start/end range: may end on another thread, may overlap others
    /// (rocprofv3's `roctxProcessRangeA`).
    StartEnd,
    /// A point in time (rocprofv3's `roctxMarkA`).
    Mark,
}

impl MarkerKind {
    /// The name the database and the JSON use (the serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            MarkerKind::PushPop => "push_pop",
            MarkerKind::StartEnd => "start_end",
            MarkerKind::Mark => "mark",
        }
    }

    pub fn parse(text: &str) -> Option<MarkerKind> {
        [MarkerKind::PushPop, MarkerKind::StartEnd, MarkerKind::Mark]
            .into_iter()
            .find(|kind| kind.as_str() == text)
    }
}

/// One range or mark of the application.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MarkerRecord {
    /// The range's id in its process, from 1 in the order ranges and marks were opened
    /// (rocprofv3's `Correlation_Id` of a marker record).
    pub id: u64,
    pub kind: MarkerKind,
    /// The call that opened it, as NVTX names it (`nvtxRangePushA`, `nvtxDomainRangeStartEx`,
    /// `nvtxMarkA`, ...): rocpd's region name, rocprofv3's operation.
    pub operation: String,
    /// The NVTX domain's name; empty for the default domain.
    pub domain: String,
    /// The message, registered strings resolved; empty when the call gave none.
    pub message: String,
    /// The NVTX category (0: none).
    pub category: u32,
    pub pid: u32,
    /// The thread that opened it.
    pub tid: u64,
    /// Nanoseconds on the clock of the dispatches' timestamps; equal for a mark.
    pub start_ns: u64,
    pub end_ns: u64,
}

impl MarkerRecord {
    /// rocprofv3's `Function` column: the message of a range or mark (the operation when it has
    /// none).
    pub fn function(&self) -> &str {
        if self.message.is_empty() {
            &self.operation
        } else {
            &self.message
        }
    }

    /// The event's `extdata` in the database: what rocpd's views show of the marker beyond its
    /// row (`message` as rocprofv3 writes it).
    pub fn extdata(&self) -> serde_json::Value {
        let mut extdata = serde_json::json!({
            "message": self.message,
            "kind": self.kind.as_str(),
            "operation": self.operation,
        });
        if !self.domain.is_empty() {
            extdata["domain"] = serde_json::json!(self.domain);
        }
        if self.category != 0 {
            extdata["category"] = serde_json::json!(self.category);
        }
        extdata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_the_serde_names() {
        for kind in [MarkerKind::PushPop, MarkerKind::StartEnd, MarkerKind::Mark] {
            let serde = serde_json::to_value(kind).unwrap();
            assert_eq!(serde.as_str(), Some(kind.as_str()));
            assert_eq!(MarkerKind::parse(kind.as_str()), Some(kind));
        }
    }
}
