//! The engine's own cost per launch in a run that traces kernels without counters
//! (`--kernel-trace`): enter and exit of each launch, the pending timings read, records sent to
//! the process's database writer. A measurement, not a check, run by hand:
//! `cargo test --release -p kreplay-core launch_cost -- --ignored --nocapture`

use super::*;
use kreplay_format::db::DbWriter;
use std::time::Instant;

#[test]
#[ignore = "a measurement: run by hand with --release"]
fn launch_cost() {
    let launches: u64 = std::env::var("KREPLAY_BENCH_LAUNCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let path = std::env::temp_dir().join(format!("kreplay-launch-cost-{}.db", std::process::id()));
    let sink = Arc::new(DbWriter::create(&path, || {}).unwrap());
    let config = ToolConfig {
        kernel_trace: true,
        ..config(0, InProcessMode::KernelReplay)
    };
    let policy = Box::new(CounterGroupsPolicy::new(&config));
    let engine: Engine<MockBackend> = Engine::with_options(
        config,
        sink.clone(),
        policy,
        EngineOptions {
            logger: Arc::new(SilentLogger),
            abort: Arc::new(|_: &str| {}),
            staging_reserve_bytes: 1024,
            window_spans_calls: true,
        },
    )
    .unwrap();
    let mut backend = MockBackend::new();
    backend.traces = true;
    let info = info(LaunchKind::Kernel);
    let began = Instant::now();
    for i in 0..launches {
        let ticket = engine.launch_enter(&mut backend, &info);
        engine.launch_exit(&mut backend, ticket, &());
        // As the CUDA backend's reader thread does every few milliseconds.
        if i % 1024 == 1023 {
            engine.collect_ready_traced(&mut backend);
        }
    }
    let spent = began.elapsed();
    let finishing = Instant::now();
    engine.finish();
    let finished = finishing.elapsed();
    let _ = std::fs::remove_file(&path);
    println!(
        "{launches} traced launches: {:.3} us per launch (enter, exit, timings read, records sent)",
        spent.as_secs_f64() * 1e6 / launches as f64
    );
    println!(
        "then {:.3} s for the writer to store what was left",
        finished.as_secs_f64()
    );
}
