use super::*;

fn parse(args: &[&str]) -> Cli {
    Cli::parse_args(std::iter::once("kreplay").chain(args.iter().copied())).unwrap()
}

#[test]
fn clap_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn each_pmc_occurrence_is_one_group_and_empty_groups_are_kept() {
    let cli = parse(&["--pmc", "A", "B", "--pmc", "--pmc", "C", "--", "app", "x"]);
    assert_eq!(
        cli.profile.pmc,
        vec![vec!["A".to_string(), "B".into()], vec![], vec!["C".into()]]
    );
    assert_eq!(cli.profile.app, vec!["app".to_string(), "x".into()]);
}

#[test]
fn optional_booleans_take_no_value_or_one() {
    let cli = parse(&[
        "--kernel-replay-beta-enabled",
        "--kernel-trace",
        "false",
        "--",
        "a",
    ]);
    assert_eq!(cli.profile.kernel_replay_beta_enabled, Some(true));
    assert_eq!(cli.profile.kernel_trace, Some(false));
    assert!(parse_bool("maybe").is_err());
}

#[test]
fn formats_take_spaces_or_commas() {
    let cli = parse(&["-f", "csv", "json,rocpd", "--", "a"]);
    assert_eq!(cli.profile.output_format, vec!["csv", "json", "rocpd"]);
}

#[test]
fn stats_and_summary_options_parse_like_rocprofv3s() {
    let cli = parse(&[
        "--stats",
        "-S",
        "-D",
        "false",
        "--summary-groups",
        "KERNEL_DISPATCH|MEMORY_COPY",
        ".*_API",
        "--summary-output-file",
        "summary",
        "-u",
        "usec",
        "--",
        "a",
    ]);
    let p = &cli.profile;
    assert_eq!(
        (p.stats, p.summary, p.summary_per_domain),
        (Some(true), Some(true), Some(false))
    );
    assert_eq!(p.summary_groups, ["KERNEL_DISPATCH|MEMORY_COPY", ".*_API"]);
    assert_eq!(p.summary_output_file.as_deref(), Some("summary"));
    assert_eq!(p.summary_units, Some(SummaryUnit::Usec));
    assert_eq!(p.app, ["a"]);
    assert!(Cli::parse_args(["kreplay", "-u", "min", "--", "a"]).is_err());
}

#[test]
fn subcommands_parse_without_app() {
    let cli = parse(&["convert", "-i", "a.db", "b.db", "-f", "csv", "json"]);
    match cli.command {
        Some(Command::Convert(c)) => {
            assert_eq!(c.inputs.len(), 2);
            assert_eq!(c.formats, vec!["csv", "json"]);
        }
        other => panic!("expected convert, got {other:?}"),
    }
}
