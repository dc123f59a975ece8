use super::expression::{parse_expression, Tree};
use super::install::find_installation;
use super::library::Origin;
use super::section_file::*;
use super::*;
use kreplay_format::sections_out::Expr;
use kreplay_format::sections_out::{Attribute, BinaryOp};

/// A section written for these tests, in the file format (not one of Nsight Compute's).
const SAMPLE: &str = r#"
Identifier: "Sample"
DisplayName: "Sample Section"
Order: 5
Sets { Identifier: "mine" }
Sets { Identifier: "full" }
Header {
  Metrics { Label: "Warps" Name: "sm__warps_launched.sum" }
  Metrics {
    Label: "Old Or New"
    Name: "old__metric.sum"
    Filter { MaxArch: CC_86 }
    Options { Name: "new__metric.sum" Filter { MinArch: CC_90 } }
  }
  Metrics { Label: "Only Ranges" Name: "range__metric.sum"
    Filter { CollectionFilter { CollectionScopes: CollectionScope_Range } } }
}
Body {
  Items {
    HorizontalContainer {
      Items { Table { Label: "T" Metrics { Label: "Grid" Name: "launch__grid_size" } } }
      Items { BarChart { ValueAxis { Label: "%" } Metrics { Name: "derived__per_warp" } } }
    }
  }
  Items { Table { Metrics { Label: "Warps" Name: "sm__warps_launched.sum" } } }
  Items { Timeline { MetricGroups { MetricRows { Metrics { Name: "pmsampling:x.avg" } } } } }
  Items { Table { Metrics { Label: "Any" Name: "regex:.*__cycles" } } }
}
Metrics { Metrics { Label: "For rules only" Name: "rules__only.sum" } }
MetricDefinitions {
  MetricDefinitions { Name: "derived__per_warp" Expression: "smsp__inst_executed.sum / sm__warps_launched.sum" }
  MetricDefinitions { Name: "derived__twice" Expression: "derived__per_warp * 2" }
}
"#;

fn sample() -> Section {
    parse_section(SAMPLE, "sample.section").unwrap()
}

#[test]
fn a_section_file_gives_its_rows_sets_and_definitions() {
    let s = sample();
    assert_eq!(
        (s.identifier.as_str(), s.display_name.as_str(), s.order),
        ("Sample", "Sample Section", 5)
    );
    assert_eq!(s.sets, ["mine", "full"]);
    let names =
        |rows: &[RowDef]| -> Vec<String> { rows.iter().map(|r| r.base.name.clone()).collect() };
    assert_eq!(
        names(&s.header),
        [
            "sm__warps_launched.sum",
            "old__metric.sum",
            "range__metric.sum"
        ]
    );
    // The body in file order, the timeline and the rules-only list left out.
    assert_eq!(
        names(&s.body),
        [
            "launch__grid_size",
            "derived__per_warp",
            "sm__warps_launched.sum",
            "regex:.*__cycles"
        ]
    );
    let all: Vec<&str> = s.rows(Details::All).map(|r| r.base.name.as_str()).collect();
    assert_eq!(
        all.len(),
        6,
        "the body's Warps row repeats the header's: once {all:?}"
    );
    assert_eq!(s.rows(Details::Body).count(), 4);
    assert_eq!(s.definitions.len(), 2);
    assert_eq!(s.body[1].label, None);
}

#[test]
fn options_and_filters_choose_the_metric_per_architecture() {
    let s = sample();
    let old_or_new = &s.header[1];
    assert_eq!(
        old_or_new.metric_for(Some(80), &Filter::default()),
        Some("old__metric.sum")
    );
    assert_eq!(old_or_new.metric_for(Some(89), &Filter::default()), None);
    assert_eq!(
        old_or_new.metric_for(Some(90), &Filter::default()),
        Some("new__metric.sum")
    );
    // A row only for range-based collection is never shown for kernel launches.
    assert_eq!(s.header[2].metric_for(Some(90), &Filter::default()), None);
    // Without an architecture, rows with an architecture filter are left out.
    assert_eq!(old_or_new.metric_for(None, &Filter::default()), None);
    assert_eq!(
        s.header[0].metric_for(None, &Filter::default()),
        Some("sm__warps_launched.sum")
    );
}

#[test]
fn resolving_gives_counters_launch_attributes_derived_values_and_reasons() {
    let s = sample();
    let known =
        |m: &str| m.starts_with("sm__") || m.starts_with("smsp__") || m == "new__metric.sum";
    assert_eq!(
        candidate_metrics(&[&s], Some(90), Details::All),
        [
            "sm__warps_launched.sum",
            "new__metric.sum",
            "smsp__inst_executed.sum"
        ]
    );
    let r = resolve(&[&s], Some(90), Details::All, "GH100", &known);
    assert_eq!(
        r.collect,
        [
            "sm__warps_launched.sum",
            "new__metric.sum",
            "smsp__inst_executed.sum"
        ]
    );
    let spec = &r.specs[0];
    let labels: Vec<&str> = spec.rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(
        labels,
        ["Warps", "Old Or New", "Grid", "derived__per_warp", "Any"]
    );
    assert_eq!(spec.rows[2].value, Expr::Attribute(Attribute::GridSize));
    assert_eq!(
        spec.rows[3].value,
        Expr::Binary {
            op: BinaryOp::Div,
            lhs: Box::new(Expr::Counter("smsp__inst_executed.sum".into())),
            rhs: Box::new(Expr::Counter("sm__warps_launched.sum".into())),
        }
    );
    assert_eq!(
        r.unavailable,
        [(
            "regex:.*__cycles".to_string(),
            "regular-expression rows are not expanded".to_string()
        )]
    );
    // On 8.6 the old metric is shown, and this chip does not know it.
    let r = resolve(&[&s], Some(86), Details::All, "GA102", &known);
    // By default (the header) the body's rows are neither shown nor collected.
    let header_only = resolve(&[&s], Some(90), Details::Header, "GH100", &known);
    assert_eq!(
        header_only.collect,
        ["sm__warps_launched.sum", "new__metric.sum"]
    );
    assert!(r.unavailable.contains(&(
        "old__metric.sum".into(),
        "not a metric CUPTI can collect on GA102".into()
    )));
}

#[test]
fn expressions_follow_precedence_parentheses_and_integer_constants() {
    let tree = parse_expression("a + b * 2 / (c - 1.5)").unwrap();
    let expr = tree.map_names(&mut |n| Expr::Counter(n.into()));
    let mut counters = Vec::new();
    expr.counters(&mut counters);
    assert_eq!(counters, ["a", "b", "c"]);
    let Expr::Binary {
        op: BinaryOp::Add,
        rhs,
        ..
    } = expr
    else {
        panic!("+ is outermost: {expr:?}");
    };
    let Expr::Binary {
        op: BinaryOp::Div,
        lhs,
        rhs: divisor,
    } = *rhs
    else {
        panic!("b * 2 / (...)");
    };
    assert!(matches!(
        *lhs,
        Expr::Binary {
            op: BinaryOp::Mul,
            ..
        }
    ));
    assert!(matches!(
        *divisor,
        Expr::Binary {
            op: BinaryOp::Sub,
            ..
        }
    ));
    assert!(parse_expression("a +").is_err());
    assert!(parse_expression("(a").is_err());
    assert!(parse_expression("a $ b").is_err());
    let deep = "(".repeat(100_000) + "a" + &")".repeat(100_000);
    assert!(parse_expression(&deep)
        .unwrap_err()
        .contains("nested deeper"));
    let Ok(Tree::Binary(_, _, two)) = parse_expression("x * 2") else {
        panic!()
    };
    assert!(matches!(*two, Tree::Constant(v, true) if v == 2.0));
}

/// Filters as Nsight Compute's own files write them (written for this test): a body item's
/// `Filter` with `Items` alternatives and plain numbers, roofline-style metric fields, and
/// derived metrics defined per architecture.
const FILTERED: &str = r#"
Identifier: "Filtered"
Filter { CollectionFilter { CollectionScopes: CollectionScope_Launch } }
Body {
  Items {
    Table { Metrics { Label: "Eviction" Name: "lts__evict.sum" } }
    Filter { Items { MinArch: 80 MaxArch: 86 } Items { MinArch: 89 } }
  }
  Items {
    RooflineChart {
      PeakWork { ValueCyclesPerSecondExpression {
        ValuePerCycleMetrics { Label: "Peak" Name: "derived__peak" }
        CyclesPerSecondMetric { Label: "Clock" Name: "sm__cycles_elapsed.avg.per_second" }
      } }
      Options { Label: "not a metric" }
    }
  }
}
MetricDefinitions {
  MetricDefinitions { Name: "derived__peak" Expression: "old__peak.sum * 2" Filter { MaxArch: CC_72 } }
  MetricDefinitions { Name: "derived__peak" Expression: "new__peak.sum * 4" Filter { MinArch: CC_75 } }
}
"#;

#[test]
fn item_filters_alternatives_and_per_architecture_definitions() {
    let s = parse_section(FILTERED, "filtered.section").unwrap();
    assert!(
        s.filter.matches(Some(90)),
        "a launch-scope section filter lets launches through"
    );
    let labels: Vec<&str> = s.body.iter().filter_map(|r| r.label.as_deref()).collect();
    assert_eq!(labels, ["Eviction", "Peak", "Clock"]);
    let eviction = &s.body[0];
    assert_eq!(
        eviction.metric_for(Some(80), &Filter::default()),
        Some("lts__evict.sum")
    );
    assert_eq!(eviction.metric_for(Some(87), &Filter::default()), None);
    assert_eq!(
        eviction.metric_for(Some(90), &Filter::default()),
        Some("lts__evict.sum")
    );
    assert_eq!(
        candidate_metrics(&[&s], Some(90), Details::Body),
        [
            "lts__evict.sum",
            "new__peak.sum",
            "sm__cycles_elapsed.avg.per_second"
        ]
    );
    assert_eq!(
        candidate_metrics(&[&s], Some(70), Details::Body),
        ["old__peak.sum", "sm__cycles_elapsed.avg.per_second"]
    );
}

#[test]
fn derived_metrics_that_fan_out_too_far_end_as_unavailable_quickly() {
    // Each level names the next four times: 4^16 terms unless the expansion is bounded.
    let mut definitions = String::new();
    for level in 0..16 {
        let next = format!("derived__l{}", level + 1);
        definitions += &format!(
            "MetricDefinitions {{ Name: \"derived__l{level}\" Expression: \"{next} + {next} + {next} + {next}\" }}\n"
        );
    }
    let text = format!(
        "Identifier: \"Fan\"\nHeader {{ Metrics {{ Name: \"derived__l0\" }} }}\nMetricDefinitions {{\n{definitions}}}"
    );
    let s = parse_section(&text, "fan.section").unwrap();
    let started = std::time::Instant::now();
    let r = resolve(&[&s], Some(90), Details::Header, "GH100", &|_| true);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(
        r.unavailable[0].1.contains("more than 10000 terms"),
        "{r:?}"
    );
}

#[test]
fn functions_of_newer_expressions_and_spacer_rows() {
    let text = r#"Identifier: "Fn"
Header {
  Metrics { Label: "" Name: "" }
  Metrics { Label: "Ratio" Name: "derived__ratio" }
  Metrics { Label: "Odd" Name: "derived__odd" }
  Metrics { Label: "Group" Name: "group:smsp__pcsamp_warp_stall_reasons" }
}
MetricDefinitions {
  MetricDefinitions { Name: "derived__ratio" Expression: "100.0 * nan_as_zero(simplify(a.sum) / (simplify(b.sum) + c.sum))" }
  MetricDefinitions { Name: "derived__odd" Expression: "max(a.sum, b.sum)" }
}"#;
    let s = parse_section(text, "fn.section").unwrap();
    assert_eq!(
        s.header.len(),
        3,
        "the spacer row without a metric is left out"
    );
    let r = resolve(&[&s], Some(90), Details::Header, "GH100", &|_| true);
    assert_eq!(r.collect, ["a.sum", "b.sum", "c.sum"]);
    let ratio = &r.specs[0].rows[0].value;
    assert!(
        matches!(ratio, Expr::Binary { op: BinaryOp::Mul, rhs, .. } if matches!(**rhs, Expr::NanAsZero(_))),
        "{ratio:?}"
    );
    let reasons: Vec<&str> = r.unavailable.iter().map(|(_, why)| why.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "the function max with 2 argument(s) is not known to kreplay",
            "metric groups are Nsight Compute's own"
        ]
    );
    assert!(parse_expression("f(a, ").is_err());
    assert!(parse_expression("f(a b)").is_err());
}

#[test]
fn a_derived_metric_that_names_itself_ends_as_unavailable() {
    let text = r#"Identifier: "Loop"
Header { Metrics { Name: "derived__loop" } }
MetricDefinitions { MetricDefinitions { Name: "derived__loop" Expression: "derived__loop + 1" } }"#;
    let s = parse_section(text, "loop.section").unwrap();
    let r = resolve(&[&s], Some(90), Details::Header, "GH100", &|_| true);
    assert!(r.unavailable[0].1.contains("refers to itself"), "{r:?}");
    assert!(r.collect.is_empty());
}

fn no_installation() -> SearchPlaces {
    SearchPlaces {
        path: Some("".into()),
        roots: Vec::new(),
    }
}

#[test]
fn without_an_installation_the_built_in_sections_are_used() {
    let library = Library::load(&[], &no_installation()).unwrap();
    assert_eq!(library.origin, Origin::BuiltIn);
    assert!(library.errors.is_empty());
    let ids: Vec<&str> = library
        .sections
        .iter()
        .map(|s| s.identifier.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "SpeedOfLight",
            "LaunchStats",
            "Occupancy",
            "MemoryWorkloadAnalysis",
            "ComputeWorkloadAnalysis"
        ]
    );
    assert_eq!(library.sets(), ["basic", "detailed", "full"]);
    let basic = library.select(&[], &["basic".into()]).unwrap();
    assert_eq!(basic.len(), 3);
    let both = library
        .select(
            &["occupancy".into(), "SpeedOfLight".into()],
            &["basic".into()],
        )
        .unwrap();
    assert_eq!(both.len(), 3, "each section once");
}

#[test]
fn sections_can_be_chosen_by_regular_expression() {
    let library = Library::load(&[], &no_installation()).unwrap();
    let ids = |chosen: Vec<&Section>| -> Vec<String> {
        chosen.iter().map(|s| s.identifier.clone()).collect()
    };
    assert_eq!(
        ids(library.select(&["regex:Workload".into()], &[]).unwrap()),
        ["MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis"]
    );
    let e = library
        .select(&["regex:^Nothing$".into()], &[])
        .unwrap_err();
    assert!(
        e.0.contains("no section identifier") && e.0.contains("SpeedOfLight"),
        "{e}"
    );
    let e = library.select(&["regex:(".into()], &[]).unwrap_err();
    assert!(
        e.0.contains("not a regular expression") && !e.0.contains('\n'),
        "{e}"
    );
}

#[test]
fn unknown_sections_and_sets_are_usage_errors_that_list_what_there_is() {
    let library = Library::load(&[], &no_installation()).unwrap();
    let e = library.select(&["SpeedOfLite".into()], &[]).unwrap_err();
    assert!(
        e.0.contains("no such section")
            && e.0.contains("SpeedOfLight")
            && e.0.contains("kreplay avail sections"),
        "{e}"
    );
    let e = library.select(&[], &["roofline".into()]).unwrap_err();
    assert!(e.0.contains("basic, detailed, full"), "{e}");
}

#[test]
fn section_folders_are_read_and_broken_files_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Sample.section"), SAMPLE).unwrap();
    std::fs::write(
        dir.path().join("Broken.section"),
        "Identifier: \"Broken\"\nHeader {\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a section").unwrap();
    let library = Library::load(&[dir.path().to_path_buf()], &no_installation()).unwrap();
    assert_eq!(library.sections.len(), 1);
    assert_eq!(library.errors.len(), 1);
    assert!(library.errors[0].1.contains("missing '}'"));
    let e = library.select(&["Broken".into()], &[]).unwrap_err();
    assert!(
        e.0.contains("could not be read") && e.0.contains("Broken.section"),
        "{e}"
    );
    let e = Library::load(&[dir.path().join("nope")], &no_installation()).unwrap_err();
    assert!(e.0.contains("not a folder"), "{e}");
}

#[test]
fn the_installation_is_found_from_ncu_on_the_path_or_the_newest_version() {
    let root = tempfile::tempdir().unwrap();
    for version in ["2024.1.0", "2025.3.1", "2025.10.0"] {
        std::fs::create_dir_all(
            root.path()
                .join(format!("nsight-compute-{version}/sections")),
        )
        .unwrap();
    }
    // CUDA's layout: bin/ncu is a script beside the versioned installations.
    std::fs::create_dir_all(root.path().join("bin")).unwrap();
    std::fs::write(root.path().join("bin/ncu"), "#!/bin/sh\n").unwrap();
    let newest = root.path().join("nsight-compute-2025.10.0/sections");
    let places = SearchPlaces {
        path: Some(root.path().join("bin").into_os_string()),
        roots: Vec::new(),
    };
    assert_eq!(find_installation(&places), Some(newest.clone()));
    // ncu inside an installation: its own sections.
    let own = root.path().join("nsight-compute-2024.1.0");
    std::fs::write(own.join("ncu"), "").unwrap();
    let places = SearchPlaces {
        path: Some(own.clone().into_os_string()),
        roots: Vec::new(),
    };
    assert_eq!(find_installation(&places), Some(own.join("sections")));
    // No ncu on the path: the roots.
    let places = SearchPlaces {
        path: Some("".into()),
        roots: vec![(root.path().to_path_buf(), "nsight-compute-")],
    };
    assert_eq!(find_installation(&places), Some(newest));
    assert_eq!(find_installation(&no_installation()), None);
}

#[test]
fn every_built_in_section_resolves_on_gh100_with_catalog_metrics() {
    let catalog = crate::catalogs::catalog_for(Some("GH100"), &[]).unwrap();
    let library = Library::load(&[], &no_installation()).unwrap();
    let all: Vec<&Section> = library.sections.iter().collect();
    let known = |m: &str| catalog.describe(m).is_ok();
    let r = resolve(&all, Some(90), Details::All, "GH100", &known);
    assert_eq!(
        r.unavailable,
        [],
        "every built-in row is obtainable on GH100"
    );
    assert!(r.collect.len() >= 20, "{:?}", r.collect);
    for spec in &r.specs {
        assert!(!spec.rows.is_empty(), "{}", spec.identifier);
    }
}

#[test]
fn the_built_in_full_set_shares_passes_on_gh100() {
    let catalog = crate::catalogs::catalog_for(Some("GH100"), &[]).unwrap();
    let library = Library::load(&[], &no_installation()).unwrap();
    let full = library.select(&[], &["full".into()]).unwrap();
    let r = resolve(&full, Some(90), Details::Header, "GH100", &|m| {
        catalog.describe(m).is_ok()
    });
    let apart: u32 = r
        .collect
        .iter()
        .map(|m| catalog.passes(&[m.as_str()]).unwrap())
        .filter(|&p| p > 1)
        .sum();
    let packed =
        crate::counters::pack(&r.collect, Some("GH100"), true, &Default::default()).unwrap();
    let executions: u32 = packed.iter().map(|(_, p)| *p).sum();
    let all: Vec<&str> = r.collect.iter().map(String::as_str).collect();
    let bound = catalog.passes(&all).unwrap();
    eprintln!("full set: {} metrics, {executions} executions (CUPTI's bound {bound}, multi-pass metrics apart {apart}); groups {:?}",
        r.collect.len(), packed.iter().map(|(g, p)| (g.counters.len(), *p)).collect::<Vec<_>>());
    // One single-pass group first (a dispatch that runs once is measured with it), the rest
    // in one CUPTI-scheduled configuration: one execution more than CUPTI's bound.
    assert!(
        executions >= bound && executions <= bound + 1,
        "{executions} vs {bound}"
    );
    assert!(
        executions < apart,
        "sharing saves executions: {executions} vs {apart}"
    );
}

#[test]
fn a_section_defined_twice_is_used_from_the_first_folder() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(one.path().join("Sample.section"), SAMPLE).unwrap();
    std::fs::write(two.path().join("Copy.section"), SAMPLE).unwrap();
    let folders = [one.path().to_path_buf(), two.path().to_path_buf()];
    let library = Library::load(&folders, &no_installation()).unwrap();
    assert_eq!(library.sections.len(), 1);
    assert!(library.sections[0]
        .origin
        .contains(&one.path().display().to_string()));
    assert!(
        library.errors[0].0.ends_with("Copy.section")
            && library.errors[0].1.contains("already defined by"),
        "{:?}",
        library.errors
    );
    assert_eq!(library.select(&[], &["mine".into()]).unwrap().len(), 1);
}

#[test]
fn a_metric_filter_takes_precedence_over_the_section_filter() {
    let text = r#"Identifier: "Old"
Filter { MaxArch: CC_86 }
Header {
  Metrics { Label: "Plain" Name: "a.sum" }
  Metrics { Label: "Newer" Name: "b.sum" Filter { MinArch: CC_90 } }
}"#;
    let s = parse_section(text, "old.section").unwrap();
    let labels = |arch| -> Vec<String> {
        resolve(&[&s], Some(arch), Details::Header, "X", &|_| true)
            .specs
            .iter()
            .flat_map(|spec| spec.rows.iter().map(|r| r.label.clone()))
            .collect()
    };
    assert_eq!(labels(80), ["Plain"]);
    assert_eq!(labels(90), ["Newer"]);
    // A section none of whose rows applies is left out.
    let text =
        r#"Identifier: "Gone" Filter { MaxArch: CC_70 } Header { Metrics { Name: "a.sum" } }"#;
    let gone = parse_section(text, "gone.section").unwrap();
    assert!(resolve(&[&gone], Some(90), Details::Header, "X", &|_| true)
        .specs
        .is_empty());
}
