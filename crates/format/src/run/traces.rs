//! A process's tracing records (markers, API calls, memory copies and allocations), held in
//! memory or read from where they are stored a page at a time, like its dispatches
//! ([`super::source`]): a traced run of millions of calls is written without being held whole
//! (issue 49).

use super::source::{read_ahead_with, Records};
use super::watch::WatchedRecord;
use super::ProcessRun;
use crate::api::{ApiDomain, ApiRecord};
use crate::error::FormatError;
use crate::markers::MarkerRecord;
use crate::memory::{MemoryAllocationRecord, MemoryCopyRecord};
use std::sync::Arc;

/// Where a reading of one kind of tracing record has got to: the last row taken of each table
/// the kind is read from (0: none yet).
pub type TraceCursor = [i64; 2];

/// The kinds of tracing record a process may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceKind {
    Markers,
    ApiCalls,
    Copies,
    Allocations,
}

impl TraceKind {
    pub const ALL: [TraceKind; 4] = [
        TraceKind::Markers,
        TraceKind::ApiCalls,
        TraceKind::Copies,
        TraceKind::Allocations,
    ];
}

/// Where a process's tracing records are kept when they are not in memory: each kind read a
/// page at a time from `at` on (which each page moves on), in the order they were recorded; an
/// empty page is the end.
pub trait TraceSource {
    fn markers_after(&self, at: &mut TraceCursor) -> Result<Vec<MarkerRecord>, FormatError>;
    /// `args`: with their arguments (else none read); `domain`: that domain's calls only (a
    /// source may give others too: the caller filters).
    fn api_calls_after(
        &self,
        at: &mut TraceCursor,
        args: bool,
        domain: Option<ApiDomain>,
    ) -> Result<Vec<ApiRecord>, FormatError>;
    fn copies_after(&self, at: &mut TraceCursor) -> Result<Vec<MemoryCopyRecord>, FormatError>;
    fn allocations_after(
        &self,
        at: &mut TraceCursor,
    ) -> Result<Vec<MemoryAllocationRecord>, FormatError>;
    /// Whether there is any record of `kind` (a source that cannot tell says yes: reading the
    /// records then says why).
    fn has(&self, kind: TraceKind) -> bool;
}

// Tracing records are never watched ([`super::watch`] sees dispatches and costs): their
// iterators are made without a watch, so these streams are never handed over.
macro_rules! not_watched {
    ($($record:ty),*) => {$(
        impl WatchedRecord for $record {
            const STREAM: usize = usize::MAX;
            fn hand(_: &mut dyn super::RecordObserver, _: usize, _: &[Self]) {}
        }
    )*};
}
not_watched!(
    MarkerRecord,
    ApiRecord,
    MemoryCopyRecord,
    MemoryAllocationRecord
);

type Fetch<T> = fn(&dyn TraceSource, &mut TraceCursor) -> Result<Vec<T>, FormatError>;

impl ProcessRun {
    /// The stored tracing records, if the process has any store of them.
    fn trace_source(&self) -> Option<&dyn TraceSource> {
        self.stored.as_ref().and_then(|s| s.0.traces())
    }

    /// The records of one kind: those in memory, then the stored ones, a page at a time, read
    /// ahead by a thread of their own ([`read_ahead_with`]).
    fn each_traced<'a, T: Clone + WatchedRecord + Send + 'static>(
        &'a self,
        memory: &'a [T],
        fetch: Fetch<T>,
    ) -> Records<'a, T> {
        let next_page = (self.stored.as_ref())
            .filter(|_| self.trace_source().is_some())
            .map(|stored| {
                let source = Arc::clone(&stored.0);
                let mut at = TraceCursor::default();
                read_ahead_with(move || match source.traces() {
                    Some(traces) => fetch(traces, &mut at),
                    None => Ok(Vec::new()),
                })
            });
        Records::new(memory, next_page, None)
    }

    /// Every marker range and mark, in the order recorded.
    pub fn each_marker(&self) -> Records<'_, MarkerRecord> {
        self.each_traced(&self.markers, |s, at| s.markers_after(at))
    }

    /// Every CUDA API call with its arguments, in the order recorded.
    pub fn each_api_call(&self) -> Records<'_, ApiRecord> {
        self.each_traced(&self.api_calls, |s, at| s.api_calls_after(at, true, None))
    }

    /// [`Self::each_api_call`] for a reader that wants one domain's calls (it filters them: the
    /// calls in memory come all): the stored calls of the other domain and their arguments are
    /// left unread.
    pub fn each_api_call_of(&self, domain: ApiDomain) -> Records<'_, ApiRecord> {
        let fetch: Fetch<ApiRecord> = match domain {
            ApiDomain::Runtime => |s, at| s.api_calls_after(at, true, Some(ApiDomain::Runtime)),
            ApiDomain::Driver => |s, at| s.api_calls_after(at, true, Some(ApiDomain::Driver)),
        };
        self.each_traced(&self.api_calls, fetch)
    }

    /// [`Self::each_api_call`] for a reader that needs no arguments: the stored calls' are left
    /// unread (most of a traced file's rows; those in memory keep theirs).
    pub fn each_api_call_without_args(&self) -> Records<'_, ApiRecord> {
        self.each_traced(&self.api_calls, |s, at| s.api_calls_after(at, false, None))
    }

    /// Every memory copy, in the order recorded.
    pub fn each_copy(&self) -> Records<'_, MemoryCopyRecord> {
        self.each_traced(&self.copies, |s, at| s.copies_after(at))
    }

    /// Every allocation and free, in the order recorded.
    pub fn each_allocation(&self) -> Records<'_, MemoryAllocationRecord> {
        self.each_traced(&self.allocations, |s, at| s.allocations_after(at))
    }

    /// Whether the process has any record of `kind` (in memory or stored).
    pub fn has_traced(&self, kind: TraceKind) -> bool {
        let in_memory = match kind {
            TraceKind::Markers => !self.markers.is_empty(),
            TraceKind::ApiCalls => !self.api_calls.is_empty(),
            TraceKind::Copies => !self.copies.is_empty(),
            TraceKind::Allocations => !self.allocations.is_empty(),
        };
        in_memory || self.trace_source().is_some_and(|s| s.has(kind))
    }

    /// Whether the process has any tracing record.
    pub fn has_traces(&self) -> bool {
        TraceKind::ALL.into_iter().any(|kind| self.has_traced(kind))
    }
}
