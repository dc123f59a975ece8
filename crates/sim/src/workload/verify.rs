//! The verification of profiled outcomes against a single execution.

use crate::workload::outcome::WorkloadOutcome;

/// The verification of a profiled run against a single execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub passed: bool,
    /// The one line the app prints.
    pub line: String,
}

/// [`verify`] for the outcomes of several threads: passes when every one does.
pub fn verify_all(profiled: &[WorkloadOutcome], reference: &WorkloadOutcome) -> Verification {
    let verifications: Vec<Verification> = profiled.iter().map(|p| verify(p, reference)).collect();
    let threads = if profiled.len() > 1 {
        format!("{} threads; ", profiled.len())
    } else {
        String::new()
    };
    let chosen = verifications
        .iter()
        .find(|v| !v.passed)
        .or(verifications.first())
        .cloned()
        .unwrap_or(Verification {
            passed: false,
            line: "kreplay-sim-app: verification FAILED (nothing ran)".to_string(),
        });
    Verification {
        passed: chosen.passed,
        line: chosen.line.replacen(" (", &format!(" ({threads}"), 1),
    }
}

pub fn verify(profiled: &WorkloadOutcome, reference: &WorkloadOutcome) -> Verification {
    let managed = ("managed", &reference.managed, &profiled.managed);
    let mismatched: Vec<String> = reference
        .tracked
        .iter()
        .zip(&profiled.tracked)
        .map(|((name, want), (_, got))| (*name, want, got))
        .chain([managed])
        .filter_map(|(name, want, got)| first_difference(name, want, got))
        .collect();
    if mismatched.is_empty() {
        Verification {
            passed: true,
            line: format!(
                "kreplay-sim-app: verification PASSED ({} device buffers, the module variable and the managed buffer match a single execution)",
                reference.tracked.len() - 1
            ),
        }
    } else {
        Verification {
            passed: false,
            line: format!(
                "kreplay-sim-app: verification FAILED ({} differ from a single execution: {})",
                mismatched.len(),
                mismatched.join(", ")
            ),
        }
    }
}

/// `name[i] = got instead of want` at the first element where `got` differs from `want`.
fn first_difference(name: &str, want: &[u32], got: &[u32]) -> Option<String> {
    if want == got {
        return None;
    }
    let first = want.iter().zip(got).position(|(w, g)| w != g).unwrap_or(0);
    Some(format!(
        "{name}[{first}] = {} instead of {}",
        got.get(first).copied().unwrap_or(0),
        want.get(first).copied().unwrap_or(0)
    ))
}
