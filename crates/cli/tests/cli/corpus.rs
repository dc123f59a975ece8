//! The fault and bad-input corpus (`tests/corpus/*.yaml`, described in its README.md): every row
//! run with the real binary in a folder of its own, its exit status, messages and files checked,
//! and every file it wrote read back.

use crate::common::*;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Corpus {
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    #[serde(default)]
    #[allow(dead_code)]
    issue: Option<String>,
    args: Vec<String>,
    #[serde(default)]
    files: BTreeMap<String, Content>,
    #[serde(default)]
    exit: i32,
    #[serde(default)]
    stderr: Vec<String>,
    #[serde(default)]
    stdout: Vec<String>,
    #[serde(default)]
    stderr_lacks: Vec<String>,
    #[serde(default)]
    stdout_lacks: Vec<String>,
    within_s: Option<u64>,
    #[serde(default)]
    exists: Vec<String>,
    #[serde(default)]
    absent: Vec<String>,
    #[serde(default)]
    writes_nothing: bool,
    /// faults.yaml's: what to do to which process, and when (not played yet).
    fault: Option<serde_yaml_ng::Value>,
    /// Why the case does not behave as written yet (where the fix belongs): it must still fail,
    /// so that the row is made an ordinary one when the fix lands.
    pending: Option<String>,
}

/// A case's input file: its text, a text repeated (huge inputs), or an SQLite database made by
/// running SQL statements (python3's sqlite3).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Repeat { repeat: String, times: usize },
    Sqlite { sqlite: String },
}

impl Content {
    fn write(&self, path: &Path) {
        match self {
            Content::Text(text) => std::fs::write(path, text).unwrap(),
            Content::Repeat { repeat, times } => {
                std::fs::write(path, repeat.repeat(*times)).unwrap()
            }
            Content::Sqlite { sqlite } => {
                let out = std::process::Command::new("python3")
                    .args([
                        "-c",
                        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()",
                    ])
                    .arg(path)
                    .arg(sqlite)
                    .output()
                    .expect("python3 runs");
                assert!(out.status.success(), "{}", text(&out.stderr));
            }
        }
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

fn load(name: &str) -> Vec<Case> {
    let path = corpus_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str::<Corpus>(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .cases
}

/// Runs one case; returns what is wrong with it, if anything.
fn run_case(case: &Case) -> Vec<String> {
    if case.fault.is_some() {
        return vec!["a `fault` row: the corpus runner does not play faults yet".into()];
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in &case.files {
        content.write(&dir.path().join(name));
    }
    let app = sim_app();
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| {
            a.replace("$APP", app.to_str().unwrap())
                .replace("$DIR", dir.path().to_str().unwrap())
        })
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let start = Instant::now();
    let out = kreplay(dir.path(), &args);
    let took = start.elapsed();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let mut wrong = Vec::new();
    if out.status.code() != Some(case.exit) {
        wrong.push(format!(
            "exit {:?}, expected {}",
            out.status.code(),
            case.exit
        ));
    }
    let limit = Duration::from_secs(case.within_s.unwrap_or(60));
    if took > limit {
        wrong.push(format!("took {took:?}, more than {limit:?}"));
    }
    for (stream, seen, wanted, unwanted) in [
        ("stderr", &stderr, &case.stderr, &case.stderr_lacks),
        ("stdout", &stdout, &case.stdout, &case.stdout_lacks),
    ] {
        for fragment in wanted.iter().filter(|f| !seen.contains(f.as_str())) {
            wrong.push(format!("{stream} lacks {fragment:?}"));
        }
        for fragment in unwanted.iter().filter(|f| seen.contains(f.as_str())) {
            wrong.push(format!("{stream} has {fragment:?}"));
        }
    }
    for path in &case.exists {
        if !dir.path().join(path).exists() {
            wrong.push(format!("{path} was not written"));
        }
    }
    for path in &case.absent {
        if dir.path().join(path).exists() {
            wrong.push(format!("{path} exists"));
        }
    }
    let written: Vec<String> = files_under(dir.path())
        .into_iter()
        .filter(|f| !case.files.contains_key(f))
        .collect();
    if case.writes_nothing && !written.is_empty() {
        wrong.push(format!("wrote {written:?}"));
    }
    for file in &written {
        if let Err(e) = read_back(&dir.path().join(file)) {
            wrong.push(format!("{file} does not read back: {e}"));
        }
    }
    if !wrong.is_empty() {
        wrong.push(format!("stdout: {stdout}\nstderr: {stderr}"));
    }
    wrong
}

/// Reads an output file back whole, by its kind.
fn read_back(path: &Path) -> Result<(), String> {
    let name = path.to_string_lossy();
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    if name.ends_with(".json") {
        serde_json::from_slice::<serde_json::Value>(&bytes).map_err(|e| e.to_string())?;
    } else if name.ends_with(".csv") {
        let text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
        let header = text.lines().next().unwrap_or("");
        if !header.starts_with('"') || !header.contains(',') {
            return Err(format!("no CSV header: {header:?}"));
        }
    } else if name.ends_with(".db") {
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])",
            ])
            .arg(path)
            .output()
            .map_err(|e| format!("python3: {e}"))?;
        let verdict = text(&out.stdout);
        if verdict.trim() != "ok" {
            return Err(format!("integrity_check: {verdict}{}", text(&out.stderr)));
        }
    } else if bytes.is_empty() {
        return Err("empty".into());
    }
    Ok(())
}

fn run_corpus(name: &str) {
    let cases = load(name);
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let wrong = run_case(case);
            match &case.pending {
                Some(why) if wrong.is_empty() => Some(format!(
                    "{}: passes now; remove its `pending: {why}`",
                    case.name
                )),
                Some(_) => None,
                None => (!wrong.is_empty()).then(|| format!("{}: {}", case.name, wrong.join("; "))),
            }
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} case(s) of {name} failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn bad_input_corpus() {
    run_corpus("bad_input.yaml");
}

#[test]
fn fault_corpus() {
    run_corpus("faults.yaml");
}
