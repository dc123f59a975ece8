//! Times reading a database's records and writing each format (issue 49 profiling aid):
//! wall time, the process's CPU time (all threads) and the main thread's CPU time.
//! Usage: post_speed [--in-memory] DATABASE [FORMAT...]; outputs under $POST_SPEED_OUT (default
//! /tmp/speed).
use kreplay_format::{open_databases, read_databases, write_outputs, OutputFormat};
use std::time::Instant;

// The command line's allocator (crates/cli/src/allocator.rs), so the figures are its figures.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn cpu(clock: libc::clockid_t) -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(clock, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

struct Span(Instant, f64, f64);
impl Span {
    fn new() -> Span {
        Span(
            Instant::now(),
            cpu(libc::CLOCK_PROCESS_CPUTIME_ID),
            cpu(libc::CLOCK_THREAD_CPUTIME_ID),
        )
    }
    fn done(&self, what: &str, n: u64) {
        let wall = self.0.elapsed().as_secs_f64();
        let all = cpu(libc::CLOCK_PROCESS_CPUTIME_ID) - self.1;
        let main = cpu(libc::CLOCK_THREAD_CPUTIME_ID) - self.2;
        println!("{what:>10}: wall {wall:.3}s cpu {all:.3}s main-thread {main:.3}s = {:.0}/s wall, {:.0}/s cpu", n as f64 / wall, n as f64 / all);
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    // `--in-memory`: every record read into memory first (timed as "load"), so each format's
    // line is its writing alone, without the reading.
    let in_memory = args.get(1).is_some_and(|a| a == "--in-memory");
    if in_memory {
        args.remove(1);
    }
    let db = std::path::PathBuf::from(&args[1]);
    let s = Span::new();
    let run = if in_memory {
        let run = read_databases(std::slice::from_ref(&db)).unwrap();
        s.done("load", 1);
        run
    } else {
        let run = open_databases(std::slice::from_ref(&db)).unwrap();
        s.done("open", 1);
        run
    };
    let s = Span::new();
    let mut n = 0u64;
    for p in &run.processes {
        for d in p.each_dispatch() {
            d.unwrap();
            n += 1;
        }
    }
    s.done("passes", n);
    let s = Span::new();
    let mut c = 0u64;
    for p in &run.processes {
        for d in p.each_cost() {
            d.unwrap();
            c += 1;
        }
    }
    s.done("costs", c);
    // Outputs go under $POST_SPEED_OUT (default /tmp/speed), one folder per format.
    let out = std::env::var("POST_SPEED_OUT").unwrap_or_else(|_| "/tmp/speed".into());
    for f in &args[2..] {
        let format: OutputFormat = f.parse().unwrap();
        let dir = std::path::PathBuf::from(format!("{out}/ex-{f}"));
        let s = Span::new();
        write_outputs(&run, &dir, "c", &[format]).unwrap();
        s.done(f, n);
    }
}
