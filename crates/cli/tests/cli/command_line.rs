//! The command line through the real binary: every rejection (exact text, exit 2), every
//! accepted run shape (printed with the hidden `--echo`), and the launcher's work around an
//! application (placeholders, exit status, merging, convert) with a stand-in application that
//! copies a prepared database to where kreplay tells it to write.

mod convert;
mod launcher;
mod process;
mod refusals;
mod run_shapes;
mod stand_in;
