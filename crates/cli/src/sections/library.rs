//! The sections available to a run, and where they came from: `--section-folder`, an Nsight
//! Compute installation, or kreplay's built-in ones; and the sections or sets a run chooses.

use super::install::{find_installation, SearchPlaces};
use super::section_file::{parse_section, Section};
use crate::error::UsageError;
use std::path::{Path, PathBuf};

/// Where the sections came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// `--section-folder`.
    Folders(Vec<PathBuf>),
    /// The `sections` folder of an Nsight Compute installation.
    Installation(PathBuf),
    BuiltIn,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Folders(folders) => {
                let list: Vec<String> = folders.iter().map(|p| p.display().to_string()).collect();
                write!(f, "--section-folder {}", list.join(", "))
            }
            Origin::Installation(dir) => {
                write!(f, "Nsight Compute's sections in {}", dir.display())
            }
            Origin::BuiltIn => {
                f.write_str("kreplay's built-in sections (no Nsight Compute installation found)")
            }
        }
    }
}

/// The sections available to a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Library {
    pub origin: Origin,
    /// By order, then identifier.
    pub sections: Vec<Section>,
    /// Files that could not be read: path and why.
    pub errors: Vec<(String, String)>,
}

impl Library {
    /// The `.section` files of `folders` when given (as `ncu --section-folder`, not recursive),
    /// else of the installation `places` lead to, else the built-in sections.
    pub fn load(folders: &[PathBuf], places: &SearchPlaces) -> Result<Library, UsageError> {
        for folder in folders {
            if !folder.is_dir() {
                return Err(UsageError::new(format!(
                    "--section-folder {}: not a folder; give the folder that holds the .section files (Nsight Compute's is <installation>/sections)",
                    folder.display()
                )));
            }
        }
        let (origin, dirs) = if !folders.is_empty() {
            (Origin::Folders(folders.to_vec()), folders.to_vec())
        } else if let Some(found) = find_installation(places) {
            (Origin::Installation(found.clone()), vec![found])
        } else {
            (Origin::BuiltIn, Vec::new())
        };
        let mut library = Library {
            origin,
            sections: Vec::new(),
            errors: Vec::new(),
        };
        if dirs.is_empty() {
            for (file, text) in super::builtin::SECTIONS {
                let section = parse_section(text, "built-in")
                    .map_err(|e| UsageError::new(format!("built-in section {file}: {e}")))?;
                library.sections.push(section);
            }
        }
        for dir in &dirs {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| UsageError::new(format!("cannot read {}: {e}", dir.display())))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "section"))
                .collect();
            files.sort();
            for file in files {
                let shown = file.display().to_string();
                let read = std::fs::read_to_string(&file)
                    .map_err(|e| e.to_string())
                    .and_then(|text| parse_section(&text, &shown));
                match read {
                    Ok(section) => match library
                        .sections
                        .iter()
                        .find(|s| s.identifier == section.identifier)
                    {
                        Some(first) => library.errors.push((
                            shown,
                            format!(
                                "section {} is already defined by {}, which is used",
                                section.identifier, first.origin
                            ),
                        )),
                        None => library.sections.push(section),
                    },
                    Err(e) => library.errors.push((shown, e)),
                }
            }
        }
        library
            .sections
            .sort_by(|a, b| (a.order, &a.identifier).cmp(&(b.order, &b.identifier)));
        Ok(library)
    }

    /// The sets the sections name, sorted.
    pub fn sets(&self) -> Vec<&str> {
        let mut sets: Vec<&str> = self
            .sections
            .iter()
            .flat_map(|s| s.sets.iter().map(String::as_str))
            .collect();
        sets.sort();
        sets.dedup();
        sets
    }

    /// The sections `--section` and `--set` choose, each once, in library order.
    pub fn select(
        &self,
        sections: &[String],
        sets: &[String],
    ) -> Result<Vec<&Section>, UsageError> {
        let mut chosen = vec![false; self.sections.len()];
        for wanted in sections {
            // `regex:PATTERN`, as Nsight Compute takes it: every section whose identifier matches.
            if let Some(pattern) = wanted.strip_prefix("regex:") {
                let re = regex::Regex::new(pattern).map_err(|e| {
                    UsageError::new(format!(
                        "--section {wanted}: not a regular expression ({}); write regex:PATTERN with a valid pattern",
                        e.to_string().lines().last().unwrap_or("invalid")
                    ))
                })?;
                let mut any = false;
                for (at, section) in self.sections.iter().enumerate() {
                    if re.is_match(&section.identifier) {
                        chosen[at] = true;
                        any = true;
                    }
                }
                if !any {
                    return Err(UsageError::new(format!(
                        "--section {wanted}: no section identifier of {} matches; they are {} (list them with `kreplay avail sections`)",
                        self.origin,
                        self.sections.iter().map(|s| s.identifier.as_str()).collect::<Vec<_>>().join(", ")
                    )));
                }
                continue;
            }
            let Some(at) = self
                .sections
                .iter()
                .position(|s| s.identifier == *wanted)
                .or_else(|| {
                    self.sections
                        .iter()
                        .position(|s| s.identifier.eq_ignore_ascii_case(wanted))
                })
            else {
                let unreadable = self
                    .errors
                    .iter()
                    .find(|(file, _)| file_stem_is(file, wanted));
                return Err(UsageError::new(match unreadable {
                    Some((file, why)) => format!("--section {wanted}: {file} could not be read ({why}); fix the file or choose another section"),
                    None => format!(
                        "--section {wanted}: no such section in {}; it has {} (list them with `kreplay avail sections`)",
                        self.origin,
                        self.sections.iter().map(|s| s.identifier.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                }));
            };
            chosen[at] = true;
        }
        for set in sets {
            let mut any = false;
            for (at, section) in self.sections.iter().enumerate() {
                if section.sets.iter().any(|s| s.eq_ignore_ascii_case(set)) {
                    chosen[at] = true;
                    any = true;
                }
            }
            if !any {
                return Err(UsageError::new(format!(
                    "--set {set}: no section of {} belongs to it; the sets are {} (list them with `kreplay avail sections`)",
                    self.origin,
                    self.sets().join(", ")
                )));
            }
        }
        Ok(self
            .sections
            .iter()
            .zip(chosen)
            .filter_map(|(s, c)| c.then_some(s))
            .collect())
    }
}

fn file_stem_is(file: &str, name: &str) -> bool {
    Path::new(file)
        .file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|s| s.eq_ignore_ascii_case(name))
}
