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

impl UsageError {
    /// clap's refusal of the command line as one line (its message, what it lists, its tips,
    /// and the way to the help of the command refused), as every other usage error is printed;
    /// `None` for `--help` and `--version` and a missing subcommand, which clap answers with
    /// help text.
    pub fn from_clap(error: &clap::Error) -> Option<UsageError> {
        use clap::error::ErrorKind;
        if matches!(
            error.kind(),
            ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        ) {
            return None;
        }
        Some(UsageError(clap_line(&error.render().to_string())))
    }
}

/// clap's rendered error (`error: ...`, listed items, `tip: ...`, `Usage: ...`, `For more
/// information ...`) as one line.
fn clap_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let usage = lines.iter().find_map(|l| l.strip_prefix("Usage:"));
    let body = lines
        .iter()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"));
    let mut message = String::new();
    let mut tips = Vec::new();
    for line in body {
        if let Some(tip) = line.strip_prefix("tip: ") {
            tips.push(tip);
        } else if message.is_empty() {
            message.push_str(line.strip_prefix("error: ").unwrap_or(line));
        } else {
            // What the message lists (after its colon), comma-separated.
            let joint = if message.ends_with(':') { " " } else { ", " };
            message.push_str(joint);
            message.push_str(line);
        }
    }
    if message.is_empty() {
        message.push_str("the command line was refused");
    }
    for tip in tips {
        message.push_str("; ");
        message.push_str(tip);
    }
    // The command refused: the usage line's words before its first option or placeholder.
    let command: Vec<&str> = usage
        .map(|u| {
            u.split_whitespace()
                .take_while(|w| !w.starts_with(['[', '<', '-']))
                .collect()
        })
        .unwrap_or_default();
    let command = if command.is_empty() {
        "kreplay".to_string()
    } else {
        command.join(" ")
    };
    message.push_str(&format!(" (`{command} --help` lists the options)"));
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_errors_become_one_line_with_their_lists_tips_and_help() {
        assert_eq!(
            clap_line("error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a value, use '-- --bogus'\n\nUsage: kreplay [OPTIONS] [-- <APP>...]\n       kreplay <COMMAND>\n\nFor more information, try '--help'.\n"),
            "unexpected argument '--bogus' found; to pass '--bogus' as a value, use '-- --bogus' (`kreplay --help` lists the options)"
        );
        assert_eq!(
            clap_line("error: the following required arguments were not provided:\n  --input <INPUTS>...\n  --x <Y>\n\nUsage: kreplay convert --input <INPUTS>...\n\nFor more information, try '--help'.\n"),
            "the following required arguments were not provided: --input <INPUTS>..., --x <Y> (`kreplay convert --help` lists the options)"
        );
        assert_eq!(
            clap_line("error: a value is required for '--input <INPUTS>...' but none was supplied\n\nFor more information, try '--help'.\n"),
            "a value is required for '--input <INPUTS>...' but none was supplied (`kreplay --help` lists the options)"
        );
        assert_eq!(
            clap_line(""),
            "the command line was refused (`kreplay --help` lists the options)"
        );
    }
}
