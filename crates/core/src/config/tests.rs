use super::*;

#[test]
fn switches_are_on_unless_set_to_0_and_a_bad_packing_value_is_refused() {
    let lookup = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    };
    assert_eq!(Switches::from_lookup(lookup(&[])), Switches::default());
    let off = Switches::from_lookup(lookup(&[
        (ENV_PACK_GROUPS, "0"),
        (ENV_WINDOW_SPANS, " 0"),
        (ENV_SEQUENCE, "reenable"),
        (ENV_WARM_UP, "0"),
        (ENV_EARLY_SETUP, "0"),
        (ENV_HOST_ORDERED_FLUSH, "1"),
        (ENV_GRAPH_NODES, "0"),
        (ENV_GRAPH_WINDOW_SPANS, "0"),
        (ENV_TIMING_EXECUTION, "0"),
        (ENV_HOST_STAGING, "1"),
        (ENV_DEBUG, "1"),
    ]));
    assert_eq!(
        off,
        Switches {
            pack_groups: false,
            window_spans: false,
            range_profiler_sequence: "reenable".into(),
            warm_up: false,
            early_setup: false,
            host_ordered_flush: true,
            graph_nodes: false,
            graph_window_spans: false,
            timing_execution: false,
            host_staging: true,
            debug: true,
            refused: None,
        }
    );
    assert!(!Switches::from_lookup(lookup(&[(ENV_DEBUG, "")])).debug);
    // The switches that must be 0 or 1: anything else is refused, the default kept.
    let flush = Switches::from_lookup(lookup(&[(ENV_HOST_ORDERED_FLUSH, "yes")]));
    assert!(!flush.host_ordered_flush);
    assert!(flush
        .refused
        .unwrap_or_default()
        .contains("KREPLAY_HOST_ORDERED_FLUSH=\"yes\" is not 0 or 1"));
    let timing = Switches::from_lookup(lookup(&[(ENV_TIMING_EXECUTION, "off")]));
    assert!(timing.timing_execution, "the default meanwhile");
    assert!(timing
        .refused
        .unwrap_or_default()
        .contains("KREPLAY_TIMING_EXECUTION=\"off\" is not 0 or 1"));
    let on = Switches::from_lookup(lookup(&[(ENV_WINDOW_SPANS, "1"), (ENV_WARM_UP, "1")]));
    assert_eq!(on, Switches::default());
    // Every on/off switch: on by default (a window across calls) or off (debug lines).
    let spans = Switches::from_lookup(lookup(&[(ENV_WINDOW_SPANS, "yes")]));
    assert!(spans.window_spans, "the default meanwhile");
    let why = spans.refused.unwrap_or_default();
    assert_eq!(
        why,
        "KREPLAY_WINDOW_SPANS=\"yes\" is not 0 or 1; use 1 (the default) to turn it on, 0 to turn it off"
    );
    let debug = Switches::from_lookup(lookup(&[(ENV_DEBUG, "on")]));
    assert!(!debug.debug);
    assert!(debug
        .refused
        .unwrap_or_default()
        .ends_with("use 1 to turn it on, 0 (the default) to turn it off"));
    assert!(!Switches::from_lookup(lookup(&[(ENV_DEBUG, "0")])).debug);
    let bad = Switches::from_lookup(lookup(&[(ENV_PACK_GROUPS, "2")]));
    assert!(bad.pack_groups, "the default meanwhile");
    let why = bad.refused.unwrap_or_default();
    assert!(
        why.contains("KREPLAY_PACK_GROUPS=\"2\" is not 0 or 1"),
        "{why}"
    );
}

#[test]
fn json_round_trip_keeps_every_field() {
    let config = ToolConfig {
        groups: vec![CounterGroup {
            counters: vec![CounterSpec {
                requested: "SQ_WAVES".into(),
                metric: "sm__warps_launched.sum".into(),
            }],
        }],
        mode: InProcessMode::Rotation { interval: 2 },
        filter: KernelFilter {
            include_regex: Some("saxpy".into()),
            exclude_regex: None,
            iteration_range: Some("[1-2]".into()),
            nvtx_include: vec!["A/".into()],
            nvtx_exclude: Vec::new(),
            selected_regions: Some(crate::config::SelectedRegions {
                from_start: false,
                ref_count: true,
            }),
        },
        kernel_trace: true,
        database_path: "/tmp/x/%pid%.db".into(),
        drain_timeout_ms: 5,
        host_staging_max_bytes: 3 << 30,
        log_level: "info".into(),
        replay_window: ReplayWindow::Count(8),
        checked_identity: Some("0123456789abcdef".into()),
        cache_control: kreplay_format::CacheControl::None,
        switches: Switches::default(),
        launcher: LauncherRank::default(),
        marker_trace: false,
        api_trace: crate::api_trace::ApiLevel::All,
        memory_copy_trace: true,
        memory_allocation_trace: true,
    };
    assert_eq!(ToolConfig::from_json(&config.to_json()).unwrap(), config);
    assert_eq!(config.database_path_for(42), "/tmp/x/42.db");
    // A configuration without the bound (an older CLI's) takes the default.
    let mut json: serde_json::Value = serde_json::from_str(&config.to_json()).unwrap();
    json.as_object_mut()
        .unwrap()
        .remove("host_staging_max_bytes");
    assert_eq!(
        ToolConfig::from_json(&json.to_string())
            .unwrap()
            .host_staging_max_bytes,
        crate::config::DEFAULT_HOST_STAGING_MAX_BYTES
    );
}

#[test]
fn a_configuration_too_long_for_the_environment_goes_through_a_file() {
    let dir = std::env::temp_dir().join(format!("kreplay-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spill = dir.join("config.json");
    let small = ToolConfig::default();
    let inline = small.to_env_value(&spill).unwrap();
    assert!(inline.starts_with('{') && !spill.exists(), "{inline}");
    assert_eq!(ToolConfig::from_env_value(&inline).unwrap(), small);

    let big = ToolConfig {
        groups: vec![
            CounterGroup {
                counters: vec![CounterSpec {
                    requested: "SQ_WAVES".into(),
                    metric: "sm__warps_launched.sum".into(),
                }],
            };
            1000
        ],
        ..ToolConfig::default()
    };
    assert!(big.to_json().len() > CONFIG_IN_ENV_MAX);
    let value = big.to_env_value(&spill).unwrap();
    assert_eq!(value, format!("@{}", spill.display()));
    assert_eq!(ToolConfig::from_env_value(&value).unwrap(), big);

    std::fs::remove_dir_all(&dir).unwrap();
    let message = ToolConfig::from_env_value(&value).unwrap_err().to_string();
    assert!(
        message.starts_with("cannot read the kreplay configuration file")
            && message.contains("config.json"),
        "{message}"
    );
}

#[test]
fn replay_window_parses_counts_and_auto_and_defaults_to_per_dispatch() {
    assert_eq!(ReplayWindow::parse("8"), Ok(ReplayWindow::Count(8)));
    assert_eq!(ReplayWindow::parse("1"), Ok(ReplayWindow::Dispatch));
    assert_eq!(ReplayWindow::parse(" AUTO "), Ok(ReplayWindow::Auto));
    for bad in ["0", "-3", "x", ""] {
        let err = ReplayWindow::parse(bad).unwrap_err();
        assert!(err.contains("e.g. 8 or auto"), "{err}");
    }
    assert_eq!(ReplayWindow::Auto.dispatches(), DEFAULT_AUTO_REPLAY_WINDOW);
    let mut json: serde_json::Value =
        serde_json::from_str(&ToolConfig::default().to_json()).unwrap();
    json.as_object_mut().unwrap().remove("replay_window");
    let old = ToolConfig::from_json(&json.to_string()).unwrap();
    assert_eq!(old.replay_window, ReplayWindow::Dispatch);
    // The spellings tests/gpu/run.py writes into KREPLAY_CONFIG.
    for (text, window) in [
        (r#""auto""#, ReplayWindow::Auto),
        (r#"{"count": 8}"#, ReplayWindow::Count(8)),
        (r#""dispatch""#, ReplayWindow::Dispatch),
    ] {
        json["replay_window"] = serde_json::from_str(text).unwrap();
        let parsed = ToolConfig::from_json(&json.to_string()).unwrap();
        assert_eq!(parsed.replay_window, window, "{text}");
    }
}

#[test]
fn invalid_json_is_a_clear_error() {
    let err = ToolConfig::from_json("{").unwrap_err().to_string();
    assert!(err.contains("KREPLAY_CONFIG"), "{err}");
}
