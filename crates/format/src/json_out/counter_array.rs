//! `callback_records.counter_collection`: the spooled counter records ([`CounterSpool`])
//! formatted and written a block at a time by two threads, this one and a helper, each taking
//! the next block, formatting it, and writing it when the blocks before it are written.
//! Formatted and written by this thread alone, they were a third of the document's time with the
//! second core idle: nothing else is read or written meanwhile (issue 49).

use super::dispatch_json::CounterRecord;
use super::raw::JsonBytes;
use super::spool::{decode_block, Blocks, CounterSpool};
use crate::progress::Ticker;
use std::io::{self, Write};
use std::sync::{Condvar, Mutex, MutexGuard};

/// A block of spooled records and their JSON: each record after a comma.
#[derive(Default)]
struct Chunk {
    block: Vec<u8>,
    json: JsonBytes,
    records: u64,
}

impl Chunk {
    fn format(&mut self, record: &mut CounterRecord) -> io::Result<()> {
        let Chunk {
            block,
            json,
            records,
        } = self;
        json.bytes.clear();
        *records = 0;
        decode_block(block, record, |r| {
            json.bytes.push(b',');
            *records += 1;
            json.counter_record(r)
        })
    }
}

/// The blocks still to take, and the next one's number.
struct Source {
    blocks: Blocks,
    next: u64,
}

/// The output, and whose turn it is to write.
struct Output<'o, W> {
    out: &'o mut W,
    /// The number of the block to write next.
    turn: u64,
    /// No comma is written before the array's first element.
    first: bool,
    /// Records written, and how many of them the ticker was told of.
    written: u64,
    ticked: u64,
    /// A worker failed or stopped: the others stop waiting for their turn.
    failed: bool,
}

struct Shared<'o, W> {
    source: Mutex<Source>,
    output: Mutex<Output<'o, W>>,
    turn_changed: Condvar,
}

impl<'o, W> Shared<'o, W> {
    fn output(&self) -> MutexGuard<'_, Output<'o, W>> {
        self.output
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Tells the waiting workers to stop.
    fn fail(&self) {
        self.output().failed = true;
        self.turn_changed.notify_all();
    }
}

/// Marks the work failed unless [`Worker::done`]: an error or a panic leaves no worker waiting
/// for a block that will never be written.
struct Worker<'s, 'o, W> {
    shared: &'s Shared<'o, W>,
    done: bool,
}

impl<W> Drop for Worker<'_, '_, W> {
    fn drop(&mut self) {
        if !self.done {
            self.shared.fail();
        }
    }
}

impl<W: Write> Worker<'_, '_, W> {
    /// Takes, formats and writes blocks until none is left; `ticker` (this thread's) is told of
    /// the records written so far at each of its writes.
    fn run(mut self, ticker: Option<&Ticker>) -> io::Result<()> {
        let (mut chunk, mut record) = (Chunk::default(), CounterRecord::default());
        loop {
            let number = {
                let mut source = self.shared.source.lock().map_err(|_| stopped())?;
                if !source.blocks.next_into(&mut chunk.block)? {
                    break;
                }
                source.next += 1;
                source.next - 1
            };
            chunk.format(&mut record)?;
            self.write(number, &chunk, ticker)?;
        }
        self.done = true;
        Ok(())
    }

    fn write(&self, number: u64, chunk: &Chunk, ticker: Option<&Ticker>) -> io::Result<()> {
        let mut output = self.shared.output();
        while output.turn != number && !output.failed {
            output = self
                .shared
                .turn_changed
                .wait(output)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        if output.failed {
            return Err(stopped());
        }
        let mut json = &chunk.json.bytes[..];
        if output.first && !json.is_empty() {
            json = &json[1..];
            output.first = false;
        }
        output.out.write_all(json)?;
        output.written += chunk.records;
        if let Some(ticker) = ticker {
            ticker.tick_by(output.written - output.ticked);
            output.ticked = output.written;
        }
        output.turn += 1;
        drop(output);
        self.shared.turn_changed.notify_all();
        Ok(())
    }
}

/// Writes the array of `spool`'s records to `out`, a step of `ticker` per record. Where the
/// helper cannot start, this thread formats and writes every block.
pub(super) fn write_counter_array<W: Write + Send>(
    out: &mut W,
    spool: CounterSpool,
    ticker: &Ticker,
) -> io::Result<()> {
    out.write_all(b"[")?;
    let shared = Shared {
        source: Mutex::new(Source {
            blocks: spool.into_blocks()?,
            next: 0,
        }),
        output: Mutex::new(Output {
            out: &mut *out,
            turn: 0,
            first: true,
            written: 0,
            ticked: 0,
            failed: false,
        }),
        turn_changed: Condvar::new(),
    };
    let worker = || Worker {
        shared: &shared,
        done: false,
    };
    let (mine, theirs) = std::thread::scope(|scope| {
        let helper = std::thread::Builder::new()
            .name("kreplay-json".into())
            .spawn_scoped(scope, || worker().run(None))
            .ok();
        let mine = worker().run(Some(ticker));
        let theirs = helper.map(|helper| helper.join().unwrap_or_else(|_| Err(stopped())));
        (mine, theirs)
    });
    let output = shared
        .output
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    ticker.tick_by(output.written - output.ticked);
    match (mine, theirs) {
        // The helper's error stopped this thread: the helper's is the one to tell.
        (Err(mine), Some(Err(theirs))) if is_stopped(&mine) => Err(theirs),
        (mine, theirs) => mine.and(theirs.unwrap_or(Ok(()))),
    }?;
    out.write_all(b"]")
}

/// Why a worker stopped when the other failed (or panicked).
#[derive(Debug)]
struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a thread formatting the JSON's counter records stopped")
    }
}

impl std::error::Error for Stopped {}

fn stopped() -> io::Error {
    io::Error::other(Stopped)
}

fn is_stopped(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|e| e.is::<Stopped>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;
    use std::path::Path;

    fn record(seed: u64) -> CounterRecord {
        let mut r = CounterRecord {
            arch_vgpr_count: seed % 255,
            ..CounterRecord::default()
        };
        r.dispatch_data.start_timestamp = seed * 1_000;
        r.dispatch_data.dispatch_info.dispatch_id = seed;
        r.replay_pass = Some((seed % 2) as u32);
        r
    }

    /// Any number of blocks, odd or even, gives the array serde_json writes for the records.
    #[test]
    fn the_array_is_the_records_in_order() {
        let dir = tempfile::tempdir().unwrap();
        for count in [0, 1, 2_000, 10_000, 23_456] {
            let mut spool = CounterSpool::new(dir.path());
            let records: Vec<_> = (0..count).map(record).collect();
            for r in &records {
                spool.push(r).unwrap();
            }
            let ticker = Ticker::begin(&Silent, Path::new(""), 0);
            let mut out = Vec::new();
            write_counter_array(&mut out, spool, &ticker).unwrap();
            let expected = serde_json::to_string(&records).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected, "{count} records");
        }
    }

    /// A writer that fails part way.
    struct Full(usize);

    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            match self.0.checked_sub(buf.len()) {
                Some(left) => {
                    self.0 = left;
                    Ok(buf.len())
                }
                None => Err(io::Error::other("disk full")),
            }
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// An output that fails in any block stops both threads with its error: none waits for a
    /// turn that never comes.
    #[test]
    fn a_failed_write_ends_the_array_with_its_error() {
        let dir = tempfile::tempdir().unwrap();
        for room in [0, 1, 100_000, 1_000_000, 3_000_000] {
            let mut spool = CounterSpool::new(dir.path());
            for seed in 0..30_000 {
                spool.push(&record(seed)).unwrap();
            }
            let ticker = Ticker::begin(&Silent, Path::new(""), 0);
            let error = write_counter_array(&mut Full(room), spool, &ticker).unwrap_err();
            assert_eq!(error.to_string(), "disk full", "room for {room} bytes");
        }
    }
}
