//! The app's command line: its usage line and the options it parses.

use kreplay_sim::workload::{WorkloadOptions, MAX_PROFILE_REGIONS};

pub(crate) const USAGE: &str = "usage: kreplay-sim-app [--iterations N] [--elements N] [--threads N] \
[--devices N] [--stall-drain-after N] [--device-memory BYTES] [--host-staging BYTES] [--end-by-signal N] \
[--until-signal] [--profile-region FIRST-LAST]...";

/// What the command line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AppOptions {
    pub(crate) workload: WorkloadOptions,
    pub(crate) threads: u32,
    /// Devices of the process.
    pub(crate) devices: u32,
    /// Replays after which the device stops draining (tests the drain deadline end to end).
    pub(crate) stall_drain_after: Option<u32>,
    /// Device memory and host staging sizes, bytes (test the staging fallbacks end to end).
    pub(crate) device_memory: Option<u64>,
    pub(crate) host_staging: Option<u64>,
    /// A signal the app ends by after the workload (tests the records kept at a signal).
    pub(crate) end_by_signal: Option<u32>,
    /// Launches on after the workload until a signal ends the app (tests signals sent to it
    /// or to kreplay while a replay window is open).
    pub(crate) until_signal: bool,
}

pub(crate) fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<AppOptions>, String> {
    let mut options = AppOptions {
        workload: WorkloadOptions::default(),
        threads: 1,
        devices: 1,
        stall_drain_after: None,
        device_memory: None,
        host_staging: None,
        end_by_signal: None,
        until_signal: false,
    };
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_string(), Some(value.to_string())),
            None => (arg.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        if arg == "--until-signal" {
            options.until_signal = true;
            continue;
        }
        if flag == "--profile-region" {
            let value = inline
                .or_else(|| args.next())
                .ok_or("--profile-region needs iterations FIRST-LAST, e.g. 1-2")?;
            let region = profile_region(&value)?;
            let slot = options
                .workload
                .profile_regions
                .iter_mut()
                .find(|r| r.is_none())
                .ok_or(format!(
                    "--profile-region is given more than {MAX_PROFILE_REGIONS} times"
                ))?;
            *slot = Some(region);
            continue;
        }
        // Counts of work must be positive; iterations, the stall point and sizes may be 0.
        let zero_allowed = match flag.as_str() {
            "--iterations" | "--stall-drain-after" | "--device-memory" | "--host-staging" => true,
            "--elements" | "--threads" | "--devices" | "--end-by-signal" => false,
            _ => return Err(format!("unknown argument {arg:?}")),
        };
        let value = inline
            .or_else(|| args.next())
            .ok_or_else(|| format!("{flag} needs a number"))?;
        let number: u64 = value
            .parse()
            .ok()
            .filter(|n: &u64| *n > 0 || zero_allowed)
            .filter(|n: &u64| {
                *n <= u64::from(u32::MAX) || flag.ends_with("memory") || flag.ends_with("staging")
            })
            .ok_or_else(|| {
                let kind = if zero_allowed {
                    "a non-negative"
                } else {
                    "a positive"
                };
                format!("{flag} {value:?} is not a valid count; give {kind} integer")
            })?;
        let count = number as u32;
        match flag.as_str() {
            "--iterations" => options.workload.iterations = count,
            "--elements" => options.workload.elements = count,
            "--threads" => options.threads = count,
            "--devices" => options.devices = count,
            "--stall-drain-after" => options.stall_drain_after = Some(count),
            "--device-memory" => options.device_memory = Some(number),
            "--end-by-signal" => options.end_by_signal = Some(count),
            _ => options.host_staging = Some(number),
        }
    }
    Ok(Some(options))
}

/// `FIRST-LAST` (0-based iterations, FIRST <= LAST) or `N`.
fn profile_region(text: &str) -> Result<(u32, u32), String> {
    let bad =
        || format!("--profile-region {text:?} is not FIRST-LAST iterations; write e.g. 1-2 or 0");
    let number = |s: &str| s.trim().parse::<u32>().map_err(|_| bad());
    let (first, last) = match text.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => (number(text)?, number(text)?),
    };
    if first > last {
        return Err(bad());
    }
    Ok((first, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<AppOptions>, String> {
        parse_args(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn options_take_separate_or_inline_values() {
        let options = parse(&[
            "--iterations",
            "0",
            "--elements=8",
            "--threads",
            "2",
            "--devices=2",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(options.workload.iterations, 0);
        assert_eq!(options.workload.elements, 8);
        assert_eq!(options.threads, 2);
        assert_eq!(options.devices, 2);
        assert!(
            parse(&["--devices", "0"]).is_err(),
            "a process has a device"
        );
        assert_eq!(options.stall_drain_after, None);
        let options = parse(&["--stall-drain-after=0", "--device-memory", "8589934592"])
            .unwrap()
            .unwrap();
        assert_eq!(options.stall_drain_after, Some(0));
        assert_eq!(options.device_memory, Some(8 << 30));
        assert!(parse(&["--threads", "8589934592"]).is_err());
        assert_eq!(parse(&["--help"]).unwrap(), None);
        assert!(parse(&["--until-signal"]).unwrap().unwrap().until_signal);
        let regions = parse(&["--profile-region", "1-2", "--profile-region=0"])
            .unwrap()
            .unwrap()
            .workload
            .profile_regions;
        assert_eq!(regions[..3], [Some((1, 2)), Some((0, 0)), None]);
        assert!(parse(&["--profile-region", "2-1"]).is_err());
        assert!(parse(&["--profile-region", "x"]).is_err());
    }

    #[test]
    fn bad_arguments_name_the_problem() {
        assert!(parse(&["--bogus"])
            .unwrap_err()
            .contains("unknown argument"));
        assert!(parse(&["--threads"])
            .unwrap_err()
            .contains("needs a number"));
        let err = parse(&["--elements", "0"]).unwrap_err();
        assert!(err.contains("positive integer"), "{err}");
        let err = parse(&["--iterations", "-1"]).unwrap_err();
        assert!(err.contains("non-negative integer"), "{err}");
    }
}
