//! A stored process's tracing records, read a page at a time by the writers
//! ([`crate::run::TraceSource`]): markers (`read_markers`), API calls (`read_api`), copies and
//! allocations (`read_memory`).

use super::pages::StoredProcess;
use crate::api::{ApiDomain, ApiRecord};
use crate::error::FormatError;
use crate::markers::MarkerRecord;
use crate::memory::{MemoryAllocationRecord, MemoryCopyRecord};
use crate::run::{TraceCursor, TraceKind, TraceSource};

impl TraceSource for StoredProcess {
    fn markers_after(&self, at: &mut TraceCursor) -> Result<Vec<MarkerRecord>, FormatError> {
        super::read_markers::markers_after(self, at)
    }

    fn api_calls_after(
        &self,
        at: &mut TraceCursor,
        args: bool,
        domain: Option<ApiDomain>,
    ) -> Result<Vec<ApiRecord>, FormatError> {
        super::read_api::api_calls_after(self, at, args, domain)
    }

    fn copies_after(&self, at: &mut TraceCursor) -> Result<Vec<MemoryCopyRecord>, FormatError> {
        super::read_memory::copies_from(self, at)
    }

    fn allocations_after(
        &self,
        at: &mut TraceCursor,
    ) -> Result<Vec<MemoryAllocationRecord>, FormatError> {
        super::read_memory::allocations_from(self, at)
    }

    /// Whether the first page of `kind` has a record, asked once per kind.
    fn has(&self, kind: TraceKind) -> bool {
        let index = TraceKind::ALL
            .iter()
            .position(|k| *k == kind)
            .expect("every kind");
        *self.has_traced[index].get_or_init(|| {
            let mut at = TraceCursor::default();
            let first = match kind {
                TraceKind::Markers => self.markers_after(&mut at).map(|p| p.is_empty()),
                TraceKind::ApiCalls => self
                    .api_calls_after(&mut at, false, None)
                    .map(|p| p.is_empty()),
                TraceKind::Copies => self.copies_after(&mut at).map(|p| p.is_empty()),
                TraceKind::Allocations => self.allocations_after(&mut at).map(|p| p.is_empty()),
            };
            // Unreadable: say yes, and the reading says why.
            !first.unwrap_or(false)
        })
    }
}
