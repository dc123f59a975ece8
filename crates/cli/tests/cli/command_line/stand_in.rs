//! A stand-in application for the launcher's tests: it copies a prepared database to where
//! kreplay tells it to write, then exits as told.

use crate::common::*;
use kreplay_format::*;
use std::path::Path;

/// A database as a profiled process with pid 4242 would write it: one kernel, two dispatches
/// replayed in two passes.
pub(super) fn fixture_db(path: &Path) {
    fixture_db_with_units(path, "warp");
}

/// The same with every counter's unit `unit` (empty, as the injected library records them on a
/// GPU).
pub(super) fn fixture_db_with_units(path: &Path, unit: &str) {
    let writer = DbWriter::create(path, || {}).unwrap();
    writer.send(Record::Process(ProcessInfo {
        pid: 4242,
        ppid: 1,
        hostname: "fixturehost".into(),
        command: vec!["app".into()],
        start_ns: 1,
        end_ns: 0,
        rank: None,
        size: None,
        cache_control: kreplay_format::CacheControl::All,
        sections: Vec::new(),
        kernel_rename: false,
        mangled_kernels: false,
        truncate_kernels: false,
    }));
    writer.send(Record::Agent(AgentInfo {
        agent_id: 0,
        name: "Reference software device".into(),
        chip: "SIM".into(),
        sm_count: 4,
        global_memory_bytes: 1 << 30,
        pci_location: String::new(),
        max_threads_per_sm: 1024,
        shared_memory_per_sm_bytes: 65_536,
    }));
    writer.send(Record::KernelSymbol(KernelSymbol {
        kernel_id: 1,
        code_object_id: 0,
        mangled_name: "scale".into(),
        demangled_name: "scale".into(),
        registers: 16,
        static_shared_bytes: 0,
        local_bytes: 0,
        param_bytes: 16,
    }));
    for name in [W, I] {
        writer.send(Record::Counter(CounterInfo {
            name: name.into(),
            metric: name.into(),
            description: String::new(),
            unit: unit.into(),
        }));
    }
    for id in 1..=2u64 {
        for pass in 0..2u32 {
            writer.send(Record::Dispatch(DispatchRecord {
                dispatch_id: id,
                replay_pass: Some(pass),
                correlation_id: id,
                agent_id: 0,
                stream_id: 0,
                pid: 4242,
                tid: 1,
                kernel_id: 1,
                grid: [8, 1, 1],
                block: [64, 1, 1],
                dynamic_shared_bytes: 0,
                start_ns: 10,
                end_ns: 20,
                counters: vec![CounterSample {
                    name: if pass == 0 { W } else { I }.into(),
                    value: 16.0,
                }],
                ranges: Vec::new(),
            }));
        }
        writer.send(Record::ReplayCost(ReplayCost {
            dispatch_id: id,
            agent_id: 0,
            outcome: ReplayOutcome::Replayed,
            passes: 2,
            bytes_tracked: 4096,
            bytes_snapshotted: 4096,
            bytes_restored: 4096,
            staging: Staging::Device,
            drain_ns: 1,
            snapshot_ns: 1000,
            pass_ns: vec![5000, 6000],
            restore_ns: 700,
            timing_execution_ns: 0,
            cache: kreplay_format::CacheState::Flushed,
            sm_clock_mhz: [0, 0],
            memory_clock_mhz: [0, 0],
        }));
    }
    writer.send(Record::ProcessEnd { end_ns: 30 });
    writer.finish().unwrap();
}

/// A stand-in application: copies `$FIXTURE_DB` to the database path kreplay gives it in
/// KREPLAY_CONFIG, then exits with `$APP_EXIT` (or kills itself when `$APP_SIGNAL` is set).
pub(super) const STAND_IN: &str = r#"p=$(printf '%s' "$KREPLAY_CONFIG" | sed -e 's/.*"database_path":"\([^"]*\)".*/\1/' -e "s/%pid%/$$/"); cp "$FIXTURE_DB" "$p"; [ -n "$APP_BLOCK" ] && echo x > "$APP_BLOCK"; [ -n "$APP_SIGNAL" ] && kill -9 $$; [ -n "$APP_SLEEP" ] && exec sleep "$APP_SLEEP"; exit ${APP_EXIT:-0}"#;

pub(super) fn stand_in_command(dir: &Path, args: &[&str], app_exit: i32) -> std::process::Command {
    let fixture = dir.join("fixture.db");
    if !fixture.exists() {
        fixture_db(&fixture);
    }
    // A placeholder injection library: the stand-in never loads CUDA.
    let fake_lib = dir.join("libfake_inject.so");
    std::fs::write(&fake_lib, b"").unwrap();
    let mut all: Vec<&str> = args.to_vec();
    all.extend_from_slice(&["--", "sh", "-c", STAND_IN]);
    let mut command = kreplay_command(dir, &all);
    command
        .env("FIXTURE_DB", &fixture)
        .env("KREPLAY_INJECT_LIB", &fake_lib)
        .env("APP_EXIT", app_exit.to_string())
        .env("KREPLAY_TEST_TAG", "tagged");
    command
}

pub(super) fn run_stand_in(
    dir: &Path,
    args: &[&str],
    app_exit: i32,
    signal: bool,
) -> std::process::Output {
    let mut command = stand_in_command(dir, args, app_exit);
    if signal {
        command.env("APP_SIGNAL", "1");
    }
    command.output().unwrap()
}
