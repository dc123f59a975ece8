//! The tool's last work, run once by the lifecycle when the process ends (its exit handlers or
//! a signal): the counter set-ups waited for, the open replay window's passes, every record
//! flushed, and the end-of-run lines.

use crate::tool::{lock, own_tool, say, Tool};
use kreplay_cuda::loader;
use std::sync::atomic::Ordering;

/// The process ends (its exit handlers, or a signal's last words, see
/// [`kreplay_core::lifecycle`], which runs this once): the open window's passes run, every
/// record is flushed.
pub(crate) fn finish_process() {
    let _ = std::panic::catch_unwind(|| {
        if let Some(tool) = own_tool() {
            // What is queued is committed first: the window's passes below need the tool's
            // locks, which the thread a signal interrupted may hold.
            tool.sink.flush();
            // A replay window still open (no CUDA call since its last launch) runs its passes
            // now. Exit handlers run in reverse order of registration and this one is
            // registered inside cuInit, so it is expected (not verified) to run before a
            // teardown handler the CUDA runtime registered earlier, while contexts exist.
            let mut backend = tool.passive_backend(std::ptr::null_mut());
            tool.phase("exit handler");
            if let Some(setup) = &tool.counter_setup {
                setup.finish_all();
            }
            let [scans, bytes, nanos] = &tool.module_scans;
            tool.debug(&format!(
                "{} cubin(s) scanned at module load, {:.1} MiB, {:.1} ms",
                scans.load(Ordering::Relaxed),
                bytes.load(Ordering::Relaxed) as f64 / (1 << 20) as f64,
                nanos.load(Ordering::Relaxed) as f64 / 1e6
            ));
            // ENTER and EXIT count separately: two callbacks per driver call or launch.
            let kinds = [
                "driver-call callbacks",
                "launch callbacks (with their replays)",
                "resource events",
            ];
            let spent: Vec<String> = kinds
                .iter()
                .zip(&tool.callback_time)
                .map(|(kind, [count, nanos])| {
                    format!(
                        "{} {kind} {:.1} ms",
                        count.load(Ordering::Relaxed),
                        nanos.load(Ordering::Relaxed) as f64 / 1e6
                    )
                })
                .collect();
            tool.debug(&format!("time in callbacks: {}", spent.join(", ")));
            let stages: Vec<String> = crate::launches::LAUNCH_STAGES
                .iter()
                .zip(&tool.launch_stages)
                .map(|(stage, [count, nanos])| {
                    let (count, nanos) =
                        (count.load(Ordering::Relaxed), nanos.load(Ordering::Relaxed));
                    format!("{stage} {:.2} us", nanos as f64 / 1e3 / count.max(1) as f64)
                })
                .collect();
            tool.debug(&format!("per launch: {}", stages.join(", ")));
            warn_of_other_cupti(tool);
            tool.engine.finish_with(&mut backend);
            tool.phase("records flushed");
            for line in lock(&tool.backend).pass_summary() {
                say(&line);
            }
        }
    });
}

/// The application loaded a CUPTI of its own (PyTorch maps one at import, for Kineto behind
/// `torch.profiler`): a process has one CUPTI subscriber, kreplay, so a profiler the application
/// runs on that copy gets no GPU events. Whether it runs one cannot be seen from here, so the
/// line says "if". Said once, at the end (the copy may be loaded at any time).
fn warn_of_other_cupti(tool: &Tool) {
    let copies = loader::other_cupti_copies();
    if let Some(first) = copies.first() {
        tool.warn_once(
            "other-cupti",
            &format!(
                "the application loaded its own CUPTI ({}{}): if it profiles itself with it (torch.profiler, Kineto, JAX's profiler), those GPU events are lost while kreplay profiles the process (one CUPTI subscriber per process)",
                first.display(),
                if copies.len() > 1 { ", and more" } else { "" }
            ),
        );
    }
}
