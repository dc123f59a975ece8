//! A stored process's tracing records, read a page at a time by the writers
//! ([`crate::run::TraceSource`]): from their record blocks where these hold every record of the
//! kind (`read_trace_blocks`), else from their rows: markers (`read_markers`), API calls
//! (`read_api`), copies and allocations (`read_memory`).

use super::pages::StoredProcess;
use crate::api::{ApiDomain, ApiRecord};
use crate::error::FormatError;
use crate::markers::MarkerRecord;
use crate::memory::{MemoryAllocationRecord, MemoryCopyRecord};
use crate::run::{TraceCursor, TraceKind, TraceSource};

impl TraceSource for StoredProcess {
    fn markers_after(&self, at: &mut TraceCursor) -> Result<Vec<MarkerRecord>, FormatError> {
        match self.blocks.traces[0] {
            true => self.markers_from_blocks(at),
            false => super::read_markers::markers_after(self, at),
        }
    }

    fn api_calls_after(
        &self,
        at: &mut TraceCursor,
        args: bool,
        domain: Option<ApiDomain>,
    ) -> Result<Vec<ApiRecord>, FormatError> {
        match self.blocks.traces[1] {
            true => self.api_calls_from_blocks(at, args, domain),
            false => super::read_api::api_calls_after(self, at, args, domain),
        }
    }

    fn copies_after(&self, at: &mut TraceCursor) -> Result<Vec<MemoryCopyRecord>, FormatError> {
        match self.blocks.traces[2] {
            true => self.copies_from_blocks(at),
            false => super::read_memory::copies_from(self, at),
        }
    }

    fn allocations_after(
        &self,
        at: &mut TraceCursor,
    ) -> Result<Vec<MemoryAllocationRecord>, FormatError> {
        match self.blocks.traces[3] {
            true => self.allocations_from_blocks(at),
            false => super::read_memory::allocations_from(self, at),
        }
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
