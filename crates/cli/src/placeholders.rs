//! rocprofv3's output-name placeholders (`-o`/`-d`): `%pid%`, `%hostname%`, `%env{NAME}%`, ...
//!
//! rocprofv3 expands them inside the profiled process; kreplay expands them in the launcher once
//! the application has exited, with the application's process id (and, for a multi-process
//! application, each process's own id), so the names come out the same.

use crate::env;
use regex::Regex;
use std::sync::OnceLock;

/// What the placeholders stand for in one expansion.
#[derive(Debug, Clone, Default)]
pub struct PlaceholderValues {
    pub pid: u32,
    /// The parent of the application: the `kreplay` process.
    pub ppid: u32,
    pub pgid: u32,
    pub psid: u32,
    pub hostname: String,
    /// The application's command line, argv[0] first.
    pub command: Vec<String>,
    /// `%launch_time%`, already formatted.
    pub launch_time: String,
    pub cwd: String,
    /// `%rank%` and `%size%`: the launcher's (kreplay's own environment), or a profiled
    /// process's own when it recorded one (`ProcessInfo::rank`).
    pub rank: Option<String>,
    pub size: Option<String>,
}

impl PlaceholderValues {
    /// Values of this machine and launcher for an application process `pid`.
    pub fn for_process(pid: u32, command: &[String], launch_time: &str) -> PlaceholderValues {
        // SAFETY: plain libc queries without pointers.
        let (ppid, pgid, psid) = unsafe {
            (
                libc::getpid() as u32,
                libc::getpgid(pid as libc::pid_t).max(0) as u32,
                libc::getsid(pid as libc::pid_t).max(0) as u32,
            )
        };
        PlaceholderValues {
            pid,
            ppid,
            pgid,
            psid,
            hostname: hostname(),
            command: command.to_vec(),
            launch_time: launch_time.to_string(),
            cwd: std::env::current_dir()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| ".".into()),
            rank: kreplay_format::launcher_rank(kreplay_format::RANK_VARIABLES, env::var),
            size: kreplay_format::launcher_rank(kreplay_format::SIZE_VARIABLES, env::var),
        }
    }
}

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".to_string();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// `%launch_time%` as rocprofv3 (timemory) formats it by default: `%F_%H.%M`, local time.
pub fn format_launch_time(epoch_secs: i64) -> String {
    // SAFETY: localtime_r writes into the tm we own.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        let t = epoch_secs as libc::time_t;
        libc::localtime_r(&t, &mut tm);
        tm
    };
    format!(
        "{:04}-{:02}-{:02}_{:02}.{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min
    )
}

/// A command-line word made safe for a file name, as rocprofv3 does: `/` becomes `_`, leading
/// `.` and `_` are dropped.
fn file_word(word: &str) -> String {
    word.trim()
        .replace('/', "_")
        .trim_start_matches(['.', '_'])
        .to_string()
}

/// Expands every placeholder in `template`, in one pass: a value (an argument such as
/// `--fmt=%s`, an environment variable) is put in as it is, never expanded again. Unknown
/// `%word%` text is left as it is (it may be part of a real name).
pub fn expand(template: &str, values: &PlaceholderValues) -> String {
    static PLACEHOLDER_RE: OnceLock<Regex> = OnceLock::new();
    // Alternatives are tried in order, so `%pid%` wins over the short `%p`.
    let placeholder_re = PLACEHOLDER_RE.get_or_init(|| {
        Regex::new(
            r"%(?:env|ENV)\{([A-Za-z0-9_]+)\}%|\$(?:env|ENV)\{([A-Za-z0-9_]+)\}|%(argv|argt|args|tag|hostname|pid|ppid|pgid|psid|psize|job|rank|size|nid|launch_time|cwd)%|%([pjrs])",
        )
        .expect("placeholder regex")
    });

    let tag = values
        .command
        .first()
        .map(|a| {
            std::path::Path::new(a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| file_word(a))
        })
        .unwrap_or_default();
    let words: Vec<String> = values.command.iter().map(|w| file_word(w)).collect();
    let args = words.iter().skip(1).cloned().collect::<Vec<_>>().join("_");
    let rank = values.rank.clone();
    let pid = values.pid.to_string();
    let job = || env::var("SLURM_JOB_ID").unwrap_or_else(|| "0".into());
    let rank_text = || rank.clone().unwrap_or_else(|| "0".into());
    let size_text = || values.size.clone().unwrap_or_else(|| "1".into());

    placeholder_re
        .replace_all(template, |caps: &regex::Captures| {
            if let Some(name) = caps.get(1).or_else(|| caps.get(2)) {
                return env::var(name.as_str()).unwrap_or_default();
            }
            let key = caps
                .get(3)
                .or_else(|| caps.get(4))
                .map_or("", |m| m.as_str());
            match key {
                "argv" => words.join("_"),
                "argt" if args.is_empty() => tag.clone(),
                "argt" => format!("{tag}_{args}"),
                "args" => args.clone(),
                "tag" => tag.clone(),
                "hostname" => values.hostname.clone(),
                "pid" | "p" => pid.clone(),
                "ppid" => values.ppid.to_string(),
                "pgid" => values.pgid.to_string(),
                "psid" => values.psid.to_string(),
                "psize" => "1".to_string(),
                "job" | "j" => job(),
                "rank" | "r" => rank_text(),
                "size" | "s" => size_text(),
                "nid" => rank.clone().unwrap_or_else(|| pid.clone()),
                "launch_time" => values.launch_time.clone(),
                "cwd" => values.cwd.clone(),
                _ => caps[0].to_string(),
            }
        })
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> PlaceholderValues {
        PlaceholderValues {
            pid: 4242,
            ppid: 17,
            pgid: 4242,
            psid: 1,
            hostname: "node7".into(),
            command: vec!["./bin/my_app".into(), "--size".into(), "1/2".into()],
            launch_time: "2026-11-30_04.05".into(),
            cwd: "/work".into(),
            rank: None,
            size: None,
        }
    }

    #[test]
    fn default_output_name_is_host_slash_pid() {
        assert_eq!(expand("%hostname%/%pid%", &values()), "node7/4242");
    }

    #[test]
    fn process_and_command_keys() {
        let v = values();
        assert_eq!(expand("%ppid%-%tag%", &v), "17-my_app");
        assert_eq!(expand("%argt%", &v), "my_app_--size_1_2");
        assert_eq!(expand("%args%", &v), "--size_1_2");
        assert_eq!(expand("%argv%", &v), "bin_my_app_--size_1_2");
        assert_eq!(expand("t_%launch_time%", &v), "t_2026-11-30_04.05");
        assert_eq!(expand("%p.%cwd%", &v), "4242./work");
        assert_eq!(expand("%foo%_%", &v), "%foo%_%");
    }

    #[test]
    fn values_are_not_expanded_again() {
        let mut v = values();
        v.command = vec!["./app".into(), "--fmt=%s%pid%".into()];
        assert_eq!(expand("%argt%", &v), "app_--fmt=%s%pid%");
        std::env::set_var("KREPLAY_TEST_PERCENT_VALUE", "%hostname%");
        assert_eq!(
            expand("%env{KREPLAY_TEST_PERCENT_VALUE}%-%hostname%", &v),
            "%hostname%-node7"
        );
    }

    #[test]
    fn env_placeholders_both_spellings() {
        std::env::set_var("KREPLAY_TEST_PLACEHOLDER", "abc");
        let v = values();
        assert_eq!(
            expand(
                "x_%env{KREPLAY_TEST_PLACEHOLDER}%_$env{KREPLAY_TEST_PLACEHOLDER}",
                &v
            ),
            "x_abc_abc"
        );
        assert_eq!(expand("%env{KREPLAY_TEST_UNSET_VAR}%y", &v), "y");
    }

    #[test]
    fn launch_time_has_rocprofv3_shape() {
        let text = format_launch_time(0);
        let re = Regex::new(r"^\d{4}-\d{2}-\d{2}_\d{2}\.\d{2}$").unwrap();
        assert!(re.is_match(&text), "{text}");
    }
}
