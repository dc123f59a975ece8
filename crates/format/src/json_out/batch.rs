//! A JSON array of records written by hand ([`JsonBytes`]) straight into a batch of about a
//! megabyte that is handed to the output whole: at least the output's own buffer
//! ([`crate::files::WRITE_BUFFER`]), so the buffered writer passes it to the file without
//! copying it (copying each record into the buffer was a tenth of the writer's CPU; issue 49).

use super::raw::JsonBytes;
use crate::files::WRITE_BUFFER;
use std::io::{self, Write};

/// An array being written: `[` is written, elements follow.
pub(super) struct Batch<'o, W: Write> {
    out: &'o mut W,
    json: JsonBytes,
    elements: usize,
}

impl<'o, W: Write> Batch<'o, W> {
    pub(super) fn begin(out: &'o mut W) -> Batch<'o, W> {
        let mut json = JsonBytes::with_capacity(WRITE_BUFFER + (64 << 10));
        json.bytes.push(b'[');
        Batch {
            out,
            json,
            elements: 0,
        }
    }

    /// Adds one element, its bytes written by `write`.
    pub(super) fn element(
        &mut self,
        write: impl FnOnce(&mut JsonBytes) -> io::Result<()>,
    ) -> io::Result<()> {
        if self.elements > 0 {
            self.json.bytes.push(b',');
        }
        self.elements += 1;
        write(&mut self.json)?;
        if self.json.bytes.len() >= WRITE_BUFFER {
            self.out.write_all(&self.json.bytes)?;
            self.json.bytes.clear();
        }
        Ok(())
    }

    /// Writes `]` and what is left.
    pub(super) fn end(mut self) -> io::Result<()> {
        self.json.bytes.push(b']');
        self.out.write_all(&self.json.bytes)
    }
}
