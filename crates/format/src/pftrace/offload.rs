//! Writes to a file on a thread of their own: the bytes gather in chunks that the thread writes
//! while the next one fills, so copying a long trace into the file takes no time from making
//! its events. Memory: a few chunks.

use crossbeam_channel::{Receiver, Sender};
use std::io::{self, Write};

/// The bytes handed to the thread at once.
const CHUNK: usize = 1 << 20;
/// How many full chunks may wait for the thread.
const WAITING: usize = 2;

/// Calls `body` with a writer whose bytes a thread writes to `file`; returns once all is
/// written. An error of the thread's comes
/// first, then `body`'s.
pub(super) fn with_writer_thread<R>(
    file: &mut (impl Write + Send),
    body: impl FnOnce(&mut dyn Write) -> io::Result<R>,
) -> io::Result<R> {
    std::thread::scope(|scope| {
        let (full, to_write) = crossbeam_channel::bounded::<Vec<u8>>(WAITING);
        let (written, free) = crossbeam_channel::bounded::<Vec<u8>>(WAITING + 2);
        let thread = std::thread::Builder::new()
            .name("kreplay-pftrace".into())
            .spawn_scoped(scope, move || -> io::Result<()> {
                for chunk in to_write {
                    file.write_all(&chunk)?;
                    let _ = written.try_send(chunk);
                }
                Ok(())
            })
            .map_err(|e| {
                io::Error::other(format!(
                    "cannot start the trace's writer thread ({e}); retry with fewer threads running"
                ))
            })?;
        let mut out = Offloaded {
            full: Some(full),
            free,
            chunk: Vec::with_capacity(CHUNK),
        };
        let done = body(&mut out).and_then(|r| out.hand_over().map(|()| r));
        drop(out);
        let thread_done = thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the trace's writer thread panicked")));
        thread_done.and(done)
    })
}

/// The writer [`with_writer_thread`] gives.
struct Offloaded {
    /// Where full chunks go; `None` once all are handed over.
    full: Option<Sender<Vec<u8>>>,
    /// Chunks written, to fill again.
    free: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
}

impl Offloaded {
    /// Hands the chunk to the thread, and starts another.
    fn send(&mut self) -> io::Result<()> {
        let mut next = self
            .free
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        next.clear();
        let chunk = std::mem::replace(&mut self.chunk, next);
        let stopped = || io::Error::other("the trace's writer thread stopped");
        self.full
            .as_ref()
            .ok_or_else(stopped)?
            .send(chunk)
            .map_err(|_| stopped())
    }

    /// Hands over the bytes left; no more may be written.
    fn hand_over(&mut self) -> io::Result<()> {
        if !self.chunk.is_empty() {
            self.send()?;
        }
        self.full = None;
        Ok(())
    }
}

impl Write for Offloaded {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.chunk.extend_from_slice(bytes);
        if self.chunk.len() >= CHUNK {
            self.send()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek};

    #[test]
    fn every_byte_reaches_the_file_in_order_and_an_error_of_the_body_comes_back() {
        let mut file = tempfile::tempfile().unwrap();
        let expected: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i % 251) as u8).collect();
        let done = with_writer_thread(&mut file, |out| {
            for piece in expected.chunks(1000) {
                out.write_all(piece)?;
            }
            Ok(7)
        });
        assert_eq!(done.unwrap(), 7);
        let mut back = Vec::new();
        file.rewind().unwrap();
        file.read_to_end(&mut back).unwrap();
        assert!(back == expected);
        let failed = with_writer_thread(&mut file, |out| {
            out.write_all(b"x")?;
            Err::<(), _>(io::Error::other("body"))
        });
        assert_eq!(failed.unwrap_err().to_string(), "body");
    }
}
