//! After the application: the databases its processes wrote, merged and written to each
//! destination its placeholders name, with the `--stats` files and the summaries.

use super::application::Prepared;
use super::launcher::{record_count, RunResult, SummaryText};
use super::running::Ended;
use crate::catalogs::{describe_recorded_counters, forget_stale_identities};
use crate::placeholders::{expand, hostname, PlaceholderValues};
use crate::plan::{RunSpec, SummaryOutput};
use crate::summary::Observed;
use kreplay_format::run::Watcher;
use kreplay_format::sections_out::render_sections_summary;
use kreplay_format::stats_out::{
    kernel_stats_from, run_stats_with, write_domain_stats_csv, write_summary, write_summary_file,
    DomainStats,
};
use kreplay_format::{open_databases, write_outputs_with, OutputFormat, RunData, WriteProgress};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// rocprofv3 indents the summary tables it prints on a stream by four spaces.
const SUMMARY_STREAM_INDENT: &str = "    ";

/// One output destination: its processes, and where each is in the run's data.
struct Destination {
    run: RunData,
    indexes: Vec<usize>,
}

/// The statistics of a destination's run, from the kernel durations gathered as its files were
/// written (read here only if they were not); names spill into `dir` if they are many.
fn destination_stats(
    destination: &Destination,
    observed: &Watcher<Observed>,
    dir: &Path,
) -> Result<Vec<DomainStats>, kreplay_format::FormatError> {
    let run = &destination.run;
    observed.complete(run);
    let mut observer = observed.observer();
    let durations = (destination.indexes.iter())
        .map(|index| observer.take_durations(*index))
        .collect();
    run_stats_with(
        run,
        kernel_stats_from(run, durations, Some(dir))?,
        Some(dir),
    )
}

/// The `--stats` files and the summary of one output destination: files written, and texts
/// for the streams.
fn post_process(
    spec: &RunSpec,
    (destination, observed): (&Destination, &Watcher<Observed>),
    dir: &Path,
    name: &str,
    files: &mut Vec<PathBuf>,
    summaries: &mut Vec<(SummaryOutput, SummaryText)>,
) -> Result<(), kreplay_format::FormatError> {
    let run = &destination.run;
    let stats_files = spec.stats && spec.formats.contains(&OutputFormat::Csv);
    let stats = if stats_files || spec.summary.is_some() {
        destination_stats(destination, observed, dir)?
    } else {
        Vec::new()
    };
    if stats_files {
        files.extend(write_domain_stats_csv(&stats, dir, name)?);
    }
    if !spec.sections.is_empty() {
        let text = render_sections_summary(run);
        if !text.is_empty() {
            summaries.push((
                SummaryOutput::Stderr,
                SummaryText::Text(format!("kreplay: sections per kernel (minimum, maximum and average over its dispatches):\n{text}")),
            ));
        }
    }
    let Some(summary) = &spec.summary else {
        return Ok(());
    };
    if stats.is_empty() {
        return Ok(());
    }
    match &summary.output {
        SummaryOutput::File(file) => files.push(write_summary_file(
            &stats,
            &summary.tables,
            summary.unit,
            dir,
            name,
            file,
        )?),
        stream => {
            // As many rows as names: written to a file beside the outputs, printed from it.
            let io = |e| kreplay_format::FormatError::Io {
                path: dir.to_path_buf(),
                source: e,
            };
            let mut file = std::io::BufWriter::new(tempfile::tempfile_in(dir).map_err(io)?);
            let (tables, unit) = (&summary.tables, summary.unit);
            write_summary(&mut file, &stats, tables, unit, SUMMARY_STREAM_INDENT).map_err(io)?;
            let file = file.into_inner().map_err(|e| io(e.into_error()))?;
            summaries.push((stream.clone(), SummaryText::File(file)));
        }
    }
    Ok(())
}

/// A process ended by SIGKILL or a crash ran no last words: what it had written is kept (its
/// databases are read as they were left), and this says what could not be. A crashing thread
/// waits for the database writer (`lifecycle::CRASH_WAIT`), a killed process not at all.
fn say_what_a_kill_lost(spec: &RunSpec, signal: &str, crashed: bool) {
    // Records of dispatches run once wait for the writer's next commit.
    let recent = if crashed {
        format!(
            "the records of dispatches run once that its database writer had not committed within {} s of the crash (the crashing thread waits for them)",
            kreplay_core::lifecycle::CRASH_WAIT.as_secs()
        )
    } else {
        format!(
            "the records of dispatches run once in its last {} ms, not yet written",
            kreplay_format::db::BATCH_INTERVAL.as_millis()
        )
    };
    let window = spec.replay_window.dispatches();
    if spec.mode == kreplay_core::config::InProcessMode::KernelReplay && window > 1 {
        say!(
            "kreplay: the application could not finish its records ({signal}): the dispatches of the replay window open then (up to {window}) ran without being recorded, and {recent}, are lost; every closed window is kept"
        );
    } else {
        say!(
            "kreplay: the application could not finish its records ({signal}): {recent}, are lost; everything before is kept"
        );
    }
}

/// A process killed while its database writer had a backlog on disk (it was sent records faster
/// than it inserted them) leaves the file behind: its records may be missing from the database.
fn say_what_backlogs_held(staging: &Path) {
    for (file, records) in kreplay_format::db::backlog::left_behind(staging) {
        say!(
            "kreplay: a process ended without last words while {records} record(s) waited on disk for its database writer ({}): up to {records} are missing from its files",
            file.display()
        );
    }
}

/// A kreplay killed while it wrote (`kill -9`) leaves its file half written under a temporary
/// name (`.<name>.tmp-<pid>`, see `kreplay_format::files`): those of processes that no longer
/// exist are removed, each said. A live pid's is another kreplay's at work, and stays.
fn remove_files_of_killed_runs(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix('.')
            .and_then(|rest| rest.rsplit_once(".tmp-"))
            .and_then(|(_, pid)| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let gone = pid > 0
            && unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone && entry.path().is_file() && std::fs::remove_file(entry.path()).is_ok() {
            say!(
                "kreplay: removed {}, a file a killed kreplay (pid {pid}) left half written",
                entry.path().display()
            );
        }
    }
}

/// The databases the run's processes wrote into the staging folder, sorted.
fn staged_databases(staging: &Path) -> Vec<PathBuf> {
    let mut databases: Vec<PathBuf> = std::fs::read_dir(staging)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "db"))
                .collect()
        })
        .unwrap_or_default();
    databases.sort();
    databases
}

/// Which process's data goes to which files: each process gets the name its own placeholders
/// give. With %pid% in the name (the default), a multi-process application writes one set of
/// files per process, as rocprofv3 does; without it they share one set.
fn destinations(
    spec: &RunSpec,
    data: &RunData,
    placeholders_base: &PlaceholderValues,
    root_pid: u32,
) -> BTreeMap<(PathBuf, String), Destination> {
    let mut by_destination: BTreeMap<(PathBuf, String), Destination> = BTreeMap::new();
    for (index, process) in data.processes.iter().enumerate() {
        let mut values = placeholders_base.clone();
        values.pid = process.process.pid;
        if process.process.pid != root_pid {
            values.ppid = process.process.ppid;
        }
        if !process.process.hostname.is_empty() {
            values.hostname = process.process.hostname.clone();
        } else {
            values.hostname = hostname();
        }
        // A rank the process's own launcher gave it (torchrun, mpirun under kreplay) names its
        // files; else the one kreplay itself was given.
        if process.process.rank.is_some() {
            values.rank = process.process.rank.clone();
            values.size = process.process.size.clone();
        }
        let mut dir = PathBuf::from(expand(&spec.output_directory, &values));
        if let Some(sub) = &spec.subdir {
            dir.push(sub);
        }
        let name = expand(&spec.output_file, &values);
        let destination = by_destination
            .entry((dir, name))
            .or_insert_with(|| Destination {
                run: RunData::default(),
                indexes: Vec::new(),
            });
        destination.run.processes.push(process.clone());
        destination.indexes.push(index);
    }
    by_destination
}

/// The recorded databases as one run, with what the CLI knows added: the sections, the
/// counters' descriptions; cached device identities the run found stale are forgotten.
fn collect(spec: &RunSpec, databases: &[PathBuf]) -> Result<RunData, kreplay_format::FormatError> {
    let mut data = open_databases(databases)?;
    // The sections were resolved here, before the run: every output of every process gets them.
    for process in &mut data.processes {
        process.process.sections = spec.sections.clone();
        process.process.kernel_rename = spec.kernel_rename;
        process.process.mangled_kernels = spec.mangled_kernels;
        process.process.truncate_kernels = spec.truncate_kernels;
    }
    describe_recorded_counters(&mut data);
    forget_stale_identities(
        data.processes
            .iter()
            .flat_map(|p| &p.warnings)
            .map(|w| w.message.as_str()),
    );
    Ok(data)
}

/// Every output of the run, destination by destination (`placeholders`: the values of the
/// application's process and its pid), adding to `files` and `summaries` as they are written,
/// the figures of the summaries gathered by `observed` as the writers read the records; the
/// first destination that cannot be written ends it, with why.
fn write_destinations(
    spec: &RunSpec,
    (data, observed): (&RunData, &Watcher<Observed>),
    (placeholders, root_pid): (&PlaceholderValues, u32),
    files: &mut Vec<PathBuf>,
    summaries: &mut Vec<(SummaryOutput, SummaryText)>,
    progress: &dyn WriteProgress,
) -> Result<(), (PathBuf, kreplay_format::FormatError)> {
    // rocpd alone is the stored files copied, which reads no record: the records the summaries
    // need are read meanwhile, on a thread of their own, instead of after the copy.
    let copies_only = spec.formats.iter().all(|f| *f == OutputFormat::Rocpd);
    for ((dir, name), destination) in &destinations(spec, data, placeholders, root_pid) {
        remove_files_of_killed_runs(dir);
        std::thread::scope(|scope| {
            if copies_only {
                scope.spawn(|| observed.complete(&destination.run));
            }
            write_outputs_with(&destination.run, dir, name, &spec.formats, progress)
        })
        .and_then(|written| {
            files.extend(written);
            post_process(spec, (destination, observed), dir, name, files, summaries)
        })
        .map_err(|e| (dir.clone(), e))?;
    }
    Ok(())
}

/// Reads what the run's processes recorded and writes every output; the staging folder is
/// removed once they are written (kept, with the databases, when they could not be).
pub(super) fn collect_and_write(
    spec: &RunSpec,
    prepared: &Prepared,
    ended: Ended,
) -> anyhow::Result<RunResult> {
    let Ended {
        exit_code,
        ended_by,
        killed,
        crashed,
        interrupted,
        root_pid,
        orphans_running,
        exited,
        placeholders,
        writing,
    } = ended;
    let staging = &prepared.staging;
    let databases = staged_databases(staging);
    // Processes still running may write into the staging folder yet: it stays.
    let remove_staging = || {
        if orphans_running == 0 {
            super::release::hand_over(staging);
            let _ = std::fs::remove_dir_all(staging);
        } else {
            say!(
                "kreplay: the staging folder {} is kept for the processes still running",
                staging.display()
            );
        }
    };
    if databases.is_empty() {
        writing.finish();
        remove_staging();
        say!(
            "kreplay: warning: the application recorded nothing ({}); no output written",
            if prepared.inject.is_ok() {
                "it created no CUDA context, or the injection library could not start; see messages above"
            } else {
                "the profiled app did not read KREPLAY_CONFIG"
            }
        );
        return Ok(RunResult {
            app_exit_code: exit_code,
            app_ended_by: ended_by.clone(),
            interrupted,
            exit_code,
            files: Vec::new(),
            data: None,
            observed: None,
            summaries: Vec::new(),
        });
    }
    // From here on a failure must not hide the application's status: it is reported, the
    // databases are kept, and the run ends with the app's status (or 1 if the app succeeded).
    let failed = |what: String, error: &dyn std::fmt::Display| {
        writing.finish();
        say!(
            "kreplay: error: {what}: {error}; the recorded databases are kept in {}",
            staging.display()
        );
        RunResult {
            app_exit_code: exit_code,
            app_ended_by: ended_by.clone(),
            interrupted,
            exit_code: if exit_code == 0 { 1 } else { exit_code },
            files: Vec::new(),
            data: None,
            observed: None,
            summaries: Vec::new(),
        }
    };
    let mut data = match collect(spec, &databases) {
        Ok(data) => data,
        Err(e) => return Ok(failed("cannot read the recorded data".into(), &e)),
    };
    if killed {
        say_what_a_kill_lost(spec, ended_by.as_deref().unwrap_or("a signal"), crashed);
    }
    say_what_backlogs_held(staging);
    if data.processes.is_empty() {
        writing.finish();
        remove_staging();
        say!("kreplay: warning: no output written: the application ended before any of its records reached its database");
        return Ok(RunResult {
            app_exit_code: exit_code,
            app_ended_by: ended_by.clone(),
            interrupted,
            exit_code: if exit_code == 0 { 1 } else { exit_code },
            files: Vec::new(),
            data: None,
            observed: None,
            summaries: Vec::new(),
        });
    }
    writing.set_message(format!("writing outputs: {} records", record_count(&data)));
    // The summary's figures are gathered as the writers read the records: they are read once.
    let observed = data.watch(Observed::new(&data, Some(staging)));
    let mut files = Vec::new();
    let mut summaries = Vec::new();
    if let Err((dir, e)) = write_destinations(
        spec,
        (&data, &observed),
        (&placeholders, root_pid),
        &mut files,
        &mut summaries,
        &writing,
    ) {
        let mut result = failed(
            format!("cannot write the output files to {}", dir.display()),
            &e,
        );
        result.files = files;
        result.data = Some(data);
        result.observed = Some(observed);
        return Ok(result);
    }
    writing.finish();
    remove_staging();
    tracing::debug!(
        "outputs written {:.1} ms after the application exited",
        exited.elapsed().as_secs_f64() * 1e3
    );
    Ok(RunResult {
        app_exit_code: exit_code,
        app_ended_by: ended_by.clone(),
        interrupted,
        exit_code,
        files,
        data: Some(data),
        observed: Some(observed),
        summaries,
    })
}
