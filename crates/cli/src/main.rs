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
mod args;
mod avail;
mod counters;
mod demo;
mod error;
mod input;
mod launch;
mod placeholders;
mod plan;
mod progress;
mod sections;
mod summary;

use anyhow::Context;
use args::{Cli, Command, ConvertArgs, ProfileArgs};
use clap::CommandFactory;
use error::{UsageError, EXIT_USAGE};
use kreplay_core::config::CounterGroup;
use kreplay_format::{read_databases, write_outputs};

/// Counter names to groups through the catalogs (the CUPTI catalog, or the reference software
/// device's for `sim__` names), keeping GPU 0's identity the checks used.
#[derive(Default)]
struct CatalogResolver {
    identity: counters::CheckedIdentity,
}

impl plan::CounterResolver for CatalogResolver {
    fn resolve_groups(&self, groups: &[Vec<String>]) -> anyhow::Result<Vec<CounterGroup>> {
        if groups.is_empty() {
            return Ok(Vec::new());
        }
        counters::resolve_groups(groups, None, &self.identity)
    }

    fn pack(&self, metrics: &[String], share: bool) -> anyhow::Result<Vec<(CounterGroup, u32)>> {
        counters::pack(metrics, None, share, &self.identity)
    }

    fn checked_identity(&self) -> Option<String> {
        self.identity.digest()
    }

    fn catalog(
        &self,
        metrics: &[String],
    ) -> anyhow::Result<Box<dyn kreplay_core::catalog::MetricCatalog>> {
        let names: Vec<&str> = metrics.iter().map(String::as_str).collect();
        counters::catalog_for(None, &names)
    }
}

fn init_logging(level: Option<args::LogLevel>) {
    use tracing_subscriber::EnvFilter;
    let default = match level {
        Some(args::LogLevel::Fatal | args::LogLevel::Error) => "error",
        Some(args::LogLevel::Info) => "info",
        Some(args::LogLevel::Trace | args::LogLevel::Env | args::LogLevel::Config) => "trace",
        Some(args::LogLevel::Warning) | None => "warn",
    };
    let filter = EnvFilter::try_from_env("KREPLAY_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}

/// Runs the application under the tool, once per planned run; progress, summary and file
/// lists go to `report` (stderr normally, so that the application's stdout stays its own).
pub fn profile(args: &ProfileArgs, report: &mut dyn std::io::Write) -> anyhow::Result<i32> {
    if args.list_avail {
        return avail::list_current_gpu();
    }
    if args.list_sections {
        return avail::run(&avail::AvailCommand::Sections {
            chip: None,
            section_folders: args.section_folders.clone(),
            sections: args.sections.clone(),
            print_details: args.print_details,
        });
    }
    let input = args.input.as_deref().map(input::read_input).transpose()?;
    // rocprofv3 treats the variable as a request for PC sampling whatever its value.
    let pc_sampling_env = std::env::var_os("ROCPROFILER_PC_SAMPLING_BETA_ENABLED").is_some();
    let plan = plan::plan(
        args,
        input.as_ref(),
        pc_sampling_env,
        &CatalogResolver::default(),
    )?;
    for notice in &plan.notices {
        writeln!(report, "{notice}")?;
    }
    let launcher = launch::Launcher {
        app: args.app.clone(),
        launch_time: placeholders::format_launch_time(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0),
        ),
        drain_timeout_s: launch::drain_timeout(args.drain_timeout)?,
        child_wait: launch::child_wait()?,
    };
    if args.echo {
        for run in &plan.runs {
            out!("{}", run.progress_line());
            out!(
                "  KREPLAY_CONFIG={}",
                launch::echo_config(run, &launcher).to_json()
            );
            out!(
                "  output: {}{} name {} formats {}{}",
                run.output_directory,
                run.subdir
                    .as_ref()
                    .map(|s| format!("/{s}"))
                    .unwrap_or_default(),
                run.output_file,
                run.formats
                    .iter()
                    .map(|f| f.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
                run.post_processing()
            );
        }
        return Ok(0);
    }
    for run in &plan.runs {
        launch::check_destination(run, &launcher)?;
    }
    let mut exit_code = 0;
    for run in &plan.runs {
        if plan.runs.len() > 1 {
            writeln!(report, "{}", run.progress_line())?;
            report.flush()?;
        }
        let result = launch::execute(run, &launcher)?;
        if let Some(data) = &result.data {
            write!(report, "{}", summary::render(data))?;
        }
        for (stream, text) in &result.summaries {
            match stream {
                plan::SummaryOutput::Stdout => {
                    use std::io::Write as _;
                    let mut stdout = say::Quiet(std::io::stdout());
                    write!(stdout, "{text}")?;
                    stdout.flush()?;
                }
                _ => write!(report, "{text}")?,
            }
        }
        for file in &result.files {
            writeln!(report, "kreplay: wrote {}", file.display())?;
        }
        if result.app_exit_code != 0 {
            writeln!(
                report,
                "kreplay: the application exited with status {}",
                result.app_exit_code
            )?;
        }
        if result.exit_code != 0 {
            exit_code = result.exit_code;
        }
    }
    Ok(exit_code)
}

fn convert(args: &ConvertArgs) -> anyhow::Result<i32> {
    for path in &args.inputs {
        if !path.is_file() {
            return Err(UsageError::new(format!(
                "input database {} does not exist; give the path of a *_results.db file",
                path.display()
            ))
            .into());
        }
    }
    let formats = plan::check_formats(&args.formats, "-f/--output-format")?;
    let progress = progress::Progress::start("reading the databases", progress::WRITE_DELAY);
    let data = read_databases(&args.inputs)
        .map(|mut data| {
            counters::describe_recorded_counters(&mut data);
            data
        })
        .context("reading the input databases");
    if let Ok(data) = &data {
        progress.set_message(format!(
            "writing outputs: {} records",
            launch::record_count(data)
        ));
    }
    let files = data.and_then(|data| {
        write_outputs(&data, &args.output_dir, &args.output_file, &formats)
            .with_context(|| format!("writing to {}", args.output_dir.display()))
            .map(|files| (files, data))
    });
    progress.finish();
    let (files, data) = files?;
    out!(
        "kreplay: merged {} database(s), {} process(es)",
        args.inputs.len(),
        data.processes.len()
    );
    for file in files {
        out!("kreplay: wrote {}", file.display());
    }
    Ok(0)
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    match &cli.command {
        Some(Command::Avail { command }) => avail::run(command),
        Some(Command::Convert(args)) => convert(args),
        Some(Command::Demo(args)) => demo::run(args),
        None => profile(&cli.profile, &mut say::Quiet(std::io::stderr())),
    }
}

/// When kreplay started (for the phase times `KREPLAY_LOG=debug` prints).
static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Milliseconds since kreplay started.
fn since_start_ms() -> f64 {
    STARTED
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
        * 1e3
}

fn main() {
    STARTED.get_or_init(std::time::Instant::now);
    // kreplay itself may initialise CUDA (to ask GPU 0 which counters it has); an injection
    // library named in our own environment must not load into kreplay. The application gets
    // its own CUDA_INJECTION64_PATH from the launcher. Done first, while there is one thread.
    std::env::remove_var("CUDA_INJECTION64_PATH");
    // KREPLAY_DEBUG's lines from the catalog's work in this process, as in the application's.
    kreplay_cuda::debug::enable(
        kreplay_core::config::Switches::from_lookup(|name| std::env::var(name).ok()).debug,
    );
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.len() == 1 {
        let _ = Cli::command().print_help();
        std::process::exit(0);
    }
    let cli = match Cli::parse_args(argv) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
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
