//! `-i/--input` files: YAML or JSON with a top-level `jobs` array (each job one application run
//! with its own counters, filters and output settings), or rocprofv3's deprecated text form
//! with one `pmc:` line per run.

use crate::error::UsageError;
use serde::Deserialize;
use std::path::Path;

mod depth;

/// A list given either as a YAML/JSON array or as one string of space/comma separated words.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum WordList {
    Many(Vec<String>),
    One(String),
}

impl WordList {
    pub fn words(&self) -> Vec<String> {
        match self {
            WordList::Many(items) => items.iter().flat_map(|s| split_words(s)).collect(),
            WordList::One(text) => split_words(text),
        }
    }

    /// The items kept whole (for iteration ranges, where `,` is part of the syntax).
    pub fn items(&self) -> Vec<String> {
        match self {
            WordList::Many(items) => items.clone(),
            WordList::One(text) => vec![text.clone()],
        }
    }
}

/// Splits counter names written with spaces and/or commas between them.
pub fn split_words(text: &str) -> Vec<String> {
    text.split([' ', ',', '\t', '\n'])
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// One job of an input file. Keys are rocprofv3's option names with `_` for `-`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    pub pmc: Option<WordList>,
    pub pmc_groups: Option<Vec<WordList>>,
    pub pmc_group_interval: Option<u64>,
    pub kernel_include_regex: Option<String>,
    pub kernel_exclude_regex: Option<String>,
    pub kernel_iteration_range: Option<WordList>,
    /// `--nvtx-include`, `--nvtx-exclude` (kreplay's keys, Nsight Compute's option names), one
    /// configuration or a list; `--selected-regions`, `--selected-regions-ref-count`.
    pub nvtx_include: Option<WordList>,
    pub nvtx_exclude: Option<WordList>,
    pub selected_regions: Option<bool>,
    pub selected_regions_ref_count: Option<bool>,
    pub kernel_trace: Option<bool>,
    /// `--marker-trace`, `--kernel-rename`.
    pub marker_trace: Option<bool>,
    pub kernel_rename: Option<bool>,
    /// `--runtime-trace`, `--sys-trace` (rocprofv3's keys).
    pub runtime_trace: Option<bool>,
    pub sys_trace: Option<bool>,
    /// `--mangled-kernels`, `--truncate-kernels`.
    pub mangled_kernels: Option<bool>,
    pub truncate_kernels: Option<bool>,
    /// `--memory-copy-trace`, `--memory-allocation-trace`.
    pub memory_copy_trace: Option<bool>,
    pub memory_allocation_trace: Option<bool>,
    pub output_file: Option<String>,
    pub output_directory: Option<String>,
    pub output_format: Option<WordList>,
    pub log_level: Option<String>,
    /// `--replay-window`: a number of dispatches or `auto`.
    pub replay_window: Option<WindowSize>,
    /// `--stats`, `--summary`, `--summary-per-domain`, `--summary-groups`,
    /// `--summary-output-file`, `--summary-units`.
    pub stats: Option<bool>,
    pub summary: Option<bool>,
    pub summary_per_domain: Option<bool>,
    pub summary_groups: Option<WordList>,
    pub summary_output_file: Option<String>,
    pub summary_units: Option<String>,
}

/// `replay_window` as a YAML/JSON number or string (`8`, `"8"`, `auto`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum WindowSize {
    Count(u64),
    Text(String),
}

impl WindowSize {
    pub fn text(&self) -> String {
        match self {
            WindowSize::Count(n) => n.to_string(),
            WindowSize::Text(text) => text.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobsFile {
    jobs: Vec<Job>,
}

/// Which input-file form the jobs came from; it decides the application-replay folder names
/// (`pass_N/` for YAML/JSON jobs, `pmc_N/` for text lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Structured,
    Text,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    pub kind: InputKind,
    pub jobs: Vec<Job>,
    /// A line for the user about the file itself (the text form's deprecation), printed by the
    /// caller with the plan's notices.
    pub warning: Option<String>,
}

pub fn read_input(path: &Path) -> Result<InputFile, UsageError> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let kind = match ext.as_str() {
        "yaml" | "yml" | "json" => InputKind::Structured,
        "txt" | "text" => InputKind::Text,
        _ => {
            return Err(UsageError::new(format!(
                "input file {} has an unsupported extension; use .yaml, .yml or .json (or the deprecated .txt)",
                path.display()
            )))
        }
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        UsageError::new(format!(
            "cannot read input file {}: {e}; check the path",
            path.display()
        ))
    })?;
    if kind == InputKind::Structured && depth::nesting(&text, depth::MAX_DEPTH) > depth::MAX_DEPTH {
        return Err(UsageError::new(format!(
            "input file {} nests more than {} levels deep; a kreplay input needs four (jobs, a job, pmc_groups, a group): check it for unclosed brackets",
            path.display(),
            depth::MAX_DEPTH
        )));
    }
    let warning = (kind == InputKind::Text).then(|| format!(
        "kreplay: warning: text input files are deprecated; write {} as YAML, e.g.\n  jobs:\n    - pmc: [A, B]\n    - pmc: [C]",
        path.display()
    ));
    let jobs = match (kind, ext.as_str()) {
        (InputKind::Text, _) => parse_text(&text),
        (_, "json") => {
            serde_json::from_str::<JobsFile>(&text)
                .map_err(|e| bad_structured(path, &e.to_string()))?
                .jobs
        }
        _ => {
            serde_yaml_ng::from_str::<JobsFile>(&text)
                .map_err(|e| bad_structured(path, &e.to_string()))?
                .jobs
        }
    };
    if jobs.is_empty() {
        return Err(UsageError::new(format!(
            "input file {} has no jobs; add at least one (e.g. `jobs: [{{pmc: [A]}}]`)",
            path.display()
        )));
    }
    Ok(InputFile {
        kind,
        jobs,
        warning,
    })
}

fn bad_structured(path: &Path, detail: &str) -> UsageError {
    let detail = detail.lines().next().unwrap_or(detail);
    UsageError::new(format!(
        "input file {} is not a valid kreplay input ({detail}); it needs a top-level `jobs` list whose entries use keys such as pmc, pmc_groups, pmc_group_interval, kernel_include_regex, output_file",
        path.display()
    ))
}

/// The deprecated text form: every `pmc:` line is one run; `#` starts a comment.
fn parse_text(text: &str) -> Vec<Job> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter_map(|line| line.strip_prefix("pmc:"))
        .map(|rest| Job {
            pmc: Some(WordList::Many(split_words(rest))),
            ..Job::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn yaml_jobs_with_lists_and_strings() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "in.yaml",
            "jobs:\n  - pmc: [A, B]\n  - pmc: \"C D,E\"\n    kernel_include_regex: \".*_kernel\"\n    kernel_iteration_range: \"[1-2],[3-4]\"\n    output_format: [csv, json]\n  - pmc_groups: [[A, B], [C]]\n    pmc_group_interval: 2\n",
        );
        let input = read_input(&path).unwrap();
        assert_eq!(input.kind, InputKind::Structured);
        assert_eq!(input.jobs.len(), 3);
        assert_eq!(input.jobs[0].pmc.as_ref().unwrap().words(), vec!["A", "B"]);
        assert_eq!(
            input.jobs[1].pmc.as_ref().unwrap().words(),
            vec!["C", "D", "E"]
        );
        assert_eq!(
            input.jobs[1]
                .kernel_iteration_range
                .as_ref()
                .unwrap()
                .items(),
            vec!["[1-2],[3-4]"]
        );
        assert_eq!(input.jobs[2].pmc_group_interval, Some(2));
        assert_eq!(input.jobs[2].pmc_groups.as_ref().unwrap().len(), 2);
    }

    #[test]
    fn json_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "in.json",
            r#"{"jobs": [{"pmc": ["A"], "kernel_trace": true}]}"#,
        );
        let input = read_input(&path).unwrap();
        assert_eq!(input.jobs[0].kernel_trace, Some(true));
    }

    #[test]
    fn replay_window_is_a_number_or_a_word() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "w.yaml",
            "jobs:\n  - pmc: [A]\n    replay_window: 8\n  - pmc: [B]\n    replay_window: auto\n",
        );
        let input = read_input(&path).unwrap();
        assert_eq!(input.jobs[0].replay_window, Some(WindowSize::Count(8)));
        assert_eq!(input.jobs[1].replay_window.as_ref().unwrap().text(), "auto");
    }

    #[test]
    fn text_lines_and_comments() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "in.txt",
            "# two runs\npmc: A B\n\npmc: C # last\n",
        );
        let input = read_input(&path).unwrap();
        assert_eq!(input.kind, InputKind::Text);
        assert!(
            input
                .warning
                .as_deref()
                .unwrap()
                .contains("text input files are deprecated"),
            "{:?}",
            input.warning
        );
        assert_eq!(input.jobs.len(), 2);
        assert_eq!(input.jobs[1].pmc.as_ref().unwrap().words(), vec!["C"]);
    }

    #[test]
    fn bad_inputs_are_one_line_errors() {
        let dir = tempfile::tempdir().unwrap();
        let ini = write(dir.path(), "in.ini", "x");
        assert!(read_input(&ini)
            .unwrap_err()
            .to_string()
            .contains("unsupported extension"));
        let unknown = write(dir.path(), "u.yaml", "jobs:\n  - pmcs: [A]\n");
        let err = read_input(&unknown).unwrap_err().to_string();
        assert!(err.contains("pmcs") && !err.contains('\n'), "{err}");
        let empty = write(dir.path(), "e.yaml", "jobs: []\n");
        assert!(read_input(&empty)
            .unwrap_err()
            .to_string()
            .contains("no jobs"));
    }
}
