//! The `KREPLAY_*` switches as a user meets them: a retired one is named and ignored.

use crate::common::*;

/// A retired switch still set in a user's environment is said once, and the run goes on as
/// without it.
#[test]
fn a_retired_switch_is_named_and_has_no_effect() {
    let dir = tempfile::tempdir().unwrap();
    let app = sim_app();
    let out = kreplay_command(dir.path(), &["--pmc", W, "--", app.to_str().unwrap()])
        .env("KREPLAY_FLUSH_DISCARD", "0")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr
            .matches("kreplay: warning: KREPLAY_FLUSH_DISCARD is retired and has no effect")
            .count(),
        1,
        "{stderr}"
    );
    // A switch that is not retired says nothing of the kind.
    let out = kreplay_command(dir.path(), &["--pmc", W, "--", app.to_str().unwrap()])
        .env("KREPLAY_PACK_GROUPS", "1")
        .output()
        .unwrap();
    assert!(
        !text(&out.stderr).contains("is retired"),
        "{}",
        text(&out.stderr)
    );
}
