//! Lines for the user on stderr and stdout. A closed or failing stream is ignored: kreplay must
//! still write its outputs and end with the application's status when nobody reads what it
//! prints (`kreplay … 2>&1 | head -3`); `eprintln!` and `println!` would panic there.

use std::io::Write;

/// `writeln!` to stderr, errors ignored.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `writeln!` to stdout, errors ignored.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// A writer whose failures are ignored: what cannot be written is dropped.
pub struct Quiet<W>(pub W);

impl<W: Write> Write for Quiet<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = self.0.write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
    }

    #[test]
    fn a_closed_stream_is_not_an_error() {
        let mut quiet = Quiet(Closed);
        assert!(writeln!(quiet, "kreplay: wrote x").is_ok());
        assert!(quiet.flush().is_ok());
    }
}
