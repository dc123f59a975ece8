use super::*;

#[test]
fn alias_resolves_to_its_metric_and_keeps_the_requested_name() {
    assert_eq!(
        resolve("SQ_WAVES").unwrap(),
        CounterSpec {
            requested: "SQ_WAVES".into(),
            metric: "sm__warps_launched.sum".into()
        }
    );
    assert_eq!(
        resolve("fetch_size").unwrap().metric,
        "dram__bytes_read.sum"
    );
    assert_eq!(resolve("fetch_size").unwrap().requested, "fetch_size");
}

#[test]
fn other_names_pass_through_as_metrics() {
    let spec = resolve("smsp__inst_executed.sum").unwrap();
    assert_eq!(spec.requested, spec.metric);
    assert_eq!(spec.metric, "smsp__inst_executed.sum");
}

#[test]
fn unsupported_alias_is_a_clear_error_with_the_nearest_metric() {
    let message = resolve("SQ_INSTS_SALU").unwrap_err().to_string();
    assert!(
        message.contains("'SQ_INSTS_SALU' has no NVIDIA equivalent"),
        "{message}"
    );
    assert!(
        message.contains("smsp__inst_executed_pipe_uniform.sum"),
        "{message}"
    );
    let message = resolve("SQ_INSTS_SMEM").unwrap_err().to_string();
    assert!(message.contains("remove it"), "{message}");
}

#[test]
fn alias_names_are_unique_and_never_look_like_metrics() {
    let mut names: Vec<String> = ALIASES
        .iter()
        .map(|a| a.name.to_ascii_lowercase())
        .collect();
    names.sort();
    let count = names.len();
    names.dedup();
    assert_eq!(names.len(), count, "duplicate alias");
    assert!(ALIASES.iter().all(|a| !a.name.contains("__")));
}

#[test]
fn the_documented_table_lists_every_alias_and_its_metric() {
    let docs = include_str!("../../../../docs/counters.md");
    for alias in ALIASES {
        let row_start = format!("| `{}` |", alias.name);
        let row = docs
            .lines()
            .find(|line| line.starts_with(&row_start))
            .unwrap_or_else(|| panic!("docs/counters.md has no row for {}", alias.name));
        match alias.target {
            AliasTarget::Metric(metric) => {
                assert!(row.contains(&format!("`{metric}`")), "{row}")
            }
            AliasTarget::Unsupported { .. } => {
                assert!(row.contains("unsupported"), "{row}")
            }
        }
    }
}
