//! Errors the user can fix by changing the command line or an input file. `main` prints them as
//! one line and exits 2, as rocprofv3 and clap do for usage errors.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl UsageError {
    pub fn new(message: impl Into<String>) -> UsageError {
        UsageError(message.into())
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Exit status for usage errors.
pub const EXIT_USAGE: i32 = 2;
