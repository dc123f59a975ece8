//! `kreplay`: rocprofv3's counter-collection command line for NVIDIA GPUs.
//!
//! `kreplay [options] -- <app> [args]` plans the runs ([`plan`]), starts the application once per
//! run with the tool's configuration in its environment ([`launch`]), then merges what every
//! process recorded into rocpd/CSV/JSON files and prints a summary ([`summary`]). Subcommands:
//! `avail` (counter catalog), `convert` (databases to CSV/JSON), `demo`.
//!
//! Exit status: the application's (1 if a signal ended it); 2 for usage errors, which are
//! decided before the application starts; 1 for other errors of kreplay itself.

#[macro_use]
mod say;
mod allocator;
mod args;
mod avail;
mod catalogs;
mod clock;
mod convert;
mod counters;
mod demo;
mod env;
mod error;
mod input;
mod launch;
mod messages;
mod placeholders;
mod plan;
mod profile;
mod progress;
mod sections;
mod summary;

use args::{Cli, Command};
use error::{UsageError, EXIT_USAGE};

fn init_logging(level: Option<args::LogLevel>) {
    use tracing_subscriber::EnvFilter;
    let default = match level {
        Some(args::LogLevel::Fatal | args::LogLevel::Error) => "error",
        Some(args::LogLevel::Info) => "info",
        Some(args::LogLevel::Trace | args::LogLevel::Env | args::LogLevel::Config) => "trace",
        Some(args::LogLevel::Warning) | None => "warn",
    };
    let filter = env::log_filter()
        .and_then(|directives| EnvFilter::try_new(directives).ok())
        .unwrap_or_else(|| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    match &cli.command {
        Some(Command::Avail { command }) => avail::run(command),
        Some(Command::Convert(args)) => convert::convert(args),
        Some(Command::Demo(args)) => demo::run(args),
        None => profile::profile(&cli.profile, &mut say::Quiet(std::io::stderr())),
    }
}

fn main() {
    allocator::configure();
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == launch::HOLD_ARG)
    {
        launch::serve_release_helper();
    }
    clock::start();
    env::forget_injection_library();
    // KREPLAY_DEBUG's lines from the catalog's work in this process, as in the application's.
    kreplay_cuda::debug::enable(env::debug_lines());
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::parse_args(argv) {
        Ok(cli) => cli,
        Err(e) => match UsageError::from_clap(&e) {
            Some(usage) => {
                say!("kreplay: error: {usage}");
                std::process::exit(EXIT_USAGE);
            }
            None => e.exit(),
        },
    };
    init_logging(cli.profile.log_level);
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let usage = e.downcast_ref::<UsageError>().is_some();
            say!("kreplay: error: {}", format!("{e:#}").replace('\n', " "));
            if usage {
                EXIT_USAGE
            } else {
                1
            }
        }
    };
    std::process::exit(code);
}
