//! The events put in time order and written on a thread of their own: the thread that makes them
//! hands them over in batches ([`Batches`], a [`Sink`]), and this one puts them through a reorder
//! window ([`super::window`]), merges them with the tracing records' sorted events and writes them
//! to the file (a packet they need, such as a track's descriptor, as soon as it comes), so that
//! ordering and writing a long trace take no time from making its events (issue 49). Memory: the
//! window and a few batches.

use super::events::{time_key_of, Sink, TimeKey};
use super::window::Window;
use super::{wire, PACKET_FIELD};
use crate::spill::Sorted;
use crossbeam_channel::{Receiver, Sender};
use std::io::{self, BufWriter, Write};

/// About how many bytes of events a batch holds.
const BATCH: usize = 256 << 10;
/// How many full batches may wait for the thread.
const WAITING: usize = 2;
/// The buffer of the thread's writes to the file.
const WRITE_BUFFER: usize = 1 << 20;

/// Events, each its key and the span of `bytes` that is its `Trace.packet` field; no key: a
/// packet written as it comes, before the events after it (see [`Sink::before`]).
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    items: Vec<(Option<TimeKey>, usize)>,
}

/// Calls `body` with a sink whose events a thread puts in time order through a window of `window`
/// events, merged with `traced`, and writes to `file`; returns once all is written. An error of
/// the thread's (such as [`super::window::NotOrdered`]) comes first, then `body`'s.
pub(super) fn with_ordering_thread(
    file: &mut (impl Write + Send),
    (window, traced): (usize, Sorted),
    body: impl FnOnce(&mut dyn Sink) -> io::Result<()>,
) -> io::Result<()> {
    std::thread::scope(|scope| {
        let (full, to_order) = crossbeam_channel::bounded::<Batch>(WAITING);
        let (ordered, free) = crossbeam_channel::bounded::<Batch>(WAITING + 2);
        let thread = std::thread::Builder::new()
            .name("kreplay-pftrace".into())
            .spawn_scoped(scope, move || -> io::Result<()> {
                let mut out = BufWriter::with_capacity(WRITE_BUFFER, file);
                let mut in_time = InTime::new(&mut out, window, traced)?;
                for mut batch in to_order {
                    let mut start = 0;
                    for &(key, end) in &batch.items {
                        let field = &batch.bytes[start..end];
                        match key {
                            Some(key) => in_time.event(key, field)?,
                            None => in_time.out.write_all(field)?,
                        }
                        start = end;
                    }
                    batch.bytes.clear();
                    batch.items.clear();
                    let _ = ordered.try_send(batch);
                }
                in_time.finish()?;
                out.flush()
            })
            .map_err(|e| {
                io::Error::other(format!(
                    "cannot start the trace's writer thread ({e}); retry with fewer threads running"
                ))
            })?;
        let mut batches = Batches {
            full: Some(full),
            free,
            batch: Batch::default(),
        };
        let done = body(&mut batches).and_then(|()| batches.hand_over());
        drop(batches);
        let thread_done = thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the trace's writer thread panicked")));
        thread_done.and(done)
    })
}

/// The sink [`with_ordering_thread`] gives: events gathered into batches for the thread.
struct Batches {
    /// Where full batches go; `None` once all are handed over.
    full: Option<Sender<Batch>>,
    /// Batches the thread is done with, to fill again.
    free: Receiver<Batch>,
    batch: Batch,
}

impl Batches {
    /// Hands the batch to the thread, and starts another.
    fn send(&mut self) -> io::Result<()> {
        let next = self.free.try_recv().unwrap_or_else(|_| Batch {
            bytes: Vec::with_capacity(BATCH + (BATCH >> 2)),
            items: Vec::new(),
        });
        let batch = std::mem::replace(&mut self.batch, next);
        let stopped = || io::Error::other("the trace's writer thread stopped");
        self.full
            .as_ref()
            .ok_or_else(stopped)?
            .send(batch)
            .map_err(|_| stopped())
    }

    /// Hands over the events left; no more may come.
    fn hand_over(&mut self) -> io::Result<()> {
        if !self.batch.items.is_empty() {
            self.send()?;
        }
        self.full = None;
        Ok(())
    }
}

impl Sink for Batches {
    fn event(&mut self, key: &TimeKey, event: &wire::Event) -> io::Result<()> {
        let bytes = &mut self.batch.bytes;
        bytes.push(PACKET_FIELD);
        event.packet(key.0, bytes);
        self.batch.items.push((Some(*key), bytes.len()));
        if bytes.len() >= BATCH {
            self.send()?;
        }
        Ok(())
    }

    fn before(&mut self, packet: &[u8]) -> io::Result<()> {
        self.batch.bytes.extend_from_slice(packet);
        self.batch.items.push((None, self.batch.bytes.len()));
        Ok(())
    }
}

/// Events in time order, through a window, merged with the tracing records' sorted events,
/// written out.
struct InTime<'o, W: Write> {
    out: &'o mut W,
    window: Window<TimeKey>,
    traced: Sorted,
    /// The tracing records' next event: its key, and its key and packet.
    next_traced: Option<(TimeKey, Vec<u8>)>,
}

impl<'o, W: Write> InTime<'o, W> {
    fn new(out: &'o mut W, window: usize, mut traced: Sorted) -> io::Result<Self> {
        let next_traced = traced.next_with(keyed)?;
        Ok(InTime {
            out,
            window: Window::new(window),
            traced,
            next_traced,
        })
    }

    /// Takes an event (its `Trace.packet` field); writes the one that leaves the window.
    fn event(&mut self, key: TimeKey, field: &[u8]) -> io::Result<()> {
        let mut item = self.window.buffer();
        item.extend_from_slice(field);
        self.window.push(key, item)?;
        if self.window.is_full() {
            if let Some((key, item)) = self.window.pop() {
                self.write(&key, &item)?;
                self.window.recycle(item);
            }
        }
        Ok(())
    }

    /// Writes an event that left the window (its `Trace.packet` field), after the tracing
    /// records' events before it.
    fn write(&mut self, key: &TimeKey, field: &[u8]) -> io::Result<()> {
        self.write_traced(Some(key))?;
        self.out.write_all(field)
    }

    /// Writes the tracing records' events before `key` (all with `None`).
    fn write_traced(&mut self, key: Option<&TimeKey>) -> io::Result<()> {
        while let Some((traced_key, traced)) = &self.next_traced {
            if key.is_some_and(|key| traced_key >= key) {
                break;
            }
            self.out.write_all(&[PACKET_FIELD])?;
            self.out.write_all(&traced[super::events::BY_TIME_KEY..])?;
            self.next_traced = self.traced.next_with(keyed)?;
        }
        Ok(())
    }

    /// Writes the events left.
    fn finish(mut self) -> io::Result<()> {
        while let Some((key, field)) = self.window.pop() {
            self.write(&key, &field)?;
        }
        self.write_traced(None)
    }
}

/// A sorted item: its key, and the item.
fn keyed(item: &[u8]) -> (TimeKey, Vec<u8>) {
    (time_key_of(item), item.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spill::Sorter;

    #[test]
    fn events_come_out_in_time_order_and_one_too_late_stops_the_thread() {
        let dir = tempfile::tempdir().unwrap();
        let traced = || Sorter::new(super::super::events::BY_TIME_KEY, dir.path());
        let key = |time: u64| (time, 0, 0, 0, 0, 0);
        let mut event = wire::Event::default();
        event.counter_value(1.0);
        let mut file = Vec::new();
        let sorted = traced().into_sorted().unwrap();
        with_ordering_thread(&mut file, (4, sorted), |sink| {
            for time in (0..5000).map(|t| t ^ 1) {
                sink.event(&key(time), &event)?;
            }
            Ok(())
        })
        .unwrap();
        let times: Vec<u64> = super::super::tests::packets(&file)
            .iter()
            .map(|p| p.timestamp.unwrap())
            .collect();
        assert_eq!(times, (0..5000).collect::<Vec<_>>());
        let sorted = traced().into_sorted().unwrap();
        let late = with_ordering_thread(&mut Vec::new(), (4, sorted), |sink| {
            for time in (10..BATCH as u64).chain([0]) {
                sink.event(&key(time), &event)?;
            }
            Ok(())
        })
        .unwrap_err();
        assert!(super::super::window::is_not_ordered(&late));
    }
}
