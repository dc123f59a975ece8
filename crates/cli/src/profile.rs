//! Profiling an application, kreplay's main command: the runs planned, each started and its
//! outputs written, with the progress, the summary and the files written reported.

use crate::args::{AvailCommand, ProfileArgs};
use crate::catalogs::{catalog_for, CheckedIdentity};
use crate::{counters, env, input, launch, placeholders, plan, say, summary};
use kreplay_core::config::CounterGroup;

/// Counter names to groups through the catalogs (the CUPTI catalog, or the reference software
/// device's for `sim__` names), keeping GPU 0's identity the checks used.
#[derive(Default)]
struct CatalogResolver {
    identity: CheckedIdentity,
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
        catalog_for(None, &names)
    }
}

/// Runs the application under the tool, once per planned run; progress, summary and file
/// lists go to `report` (stderr normally, so that the application's stdout stays its own).
pub fn profile(args: &ProfileArgs, report: &mut dyn std::io::Write) -> anyhow::Result<i32> {
    if args.list_avail {
        return crate::avail::list_current_gpu();
    }
    if args.list_sections {
        return crate::avail::run(&AvailCommand::Sections {
            chip: None,
            section_folders: args.section_folders.clone(),
            sections: args.sections.clone(),
            print_details: args.print_details,
        });
    }
    let input = args.input.as_deref().map(input::read_input).transpose()?;
    if let Some(warning) = input.as_ref().and_then(|i| i.warning.as_ref()) {
        writeln!(report, "{warning}")?;
    }
    // rocprofv3 treats the variable as a request for PC sampling whatever its value.
    let pc_sampling_env = env::pc_sampling_requested();
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
        drain_timeout_s: env::drain_timeout(args.drain_timeout)?,
        host_staging_max: args.host_staging_max,
        child_wait: env::child_wait()?,
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
    for (index, run) in plan.runs.iter().enumerate() {
        if plan.runs.len() > 1 {
            writeln!(report, "{}", run.progress_line())?;
            report.flush()?;
        }
        // `finishing` holds kreplay's signal handling until this run's lines are printed.
        let (result, finishing) = launch::execute(run, &launcher)?;
        if let (Some(data), Some(observed)) = (&result.data, &result.observed) {
            let warnings_printed = !matches!(
                args.log_level,
                Some(crate::args::LogLevel::Fatal | crate::args::LogLevel::Error)
            );
            write!(
                report,
                "{}",
                summary::render_with(data, observed, warnings_printed)
            )?;
        }
        for (stream, text) in &result.summaries {
            match stream {
                plan::SummaryOutput::Stdout => {
                    use std::io::Write as _;
                    let mut stdout = say::Quiet(std::io::stdout());
                    text.write_to(&mut stdout)?;
                    stdout.flush()?;
                }
                _ => text.write_to(report)?,
            }
        }
        for file in &result.files {
            writeln!(report, "kreplay: wrote {}", file.display())?;
        }
        if let Some(signal) = &result.app_ended_by {
            writeln!(report, "kreplay: the application was ended by {signal}")?;
        } else if result.app_exit_code != 0 {
            writeln!(
                report,
                "kreplay: the application exited with status {}",
                result.app_exit_code
            )?;
        }
        if result.exit_code != 0 {
            exit_code = result.exit_code;
        }
        // Also a Ctrl-C or SIGTERM while the outputs were written or the account printed.
        let left = plan.runs.len() - index - 1;
        let stopped = (result.interrupted || launch::stop_asked()) && left > 0;
        if stopped {
            writeln!(
                report,
                "kreplay: stopped: the run was interrupted, so the last {left} of {} passes were not run (the outputs above are complete); run kreplay again for their counters",
                plan.runs.len()
            )?;
        }
        if stopped || left == 0 {
            finishing.until_exit();
            break;
        }
    }
    Ok(exit_code)
}
