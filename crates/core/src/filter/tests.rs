use super::*;

fn selector(include: Option<&str>, exclude: Option<&str>, range: Option<&str>) -> KernelSelector {
    KernelSelector::new(&KernelFilter {
        include_regex: include.map(String::from),
        exclude_regex: exclude.map(String::from),
        iteration_range: range.map(String::from),
        ..KernelFilter::default()
    })
    .unwrap()
}

#[test]
fn iteration_range_parses_rocprofv3_syntax() {
    let range = IterationRange::parse("[1-2],[4], 7-8").unwrap();
    let members: Vec<u64> = (0..10).filter(|&i| range.contains(i)).collect();
    assert_eq!(members, vec![1, 2, 4, 7, 8]);
    assert!(IterationRange::parse("[]").unwrap().is_empty());
}

#[test]
fn iteration_range_rejects_bad_tokens_naming_them() {
    for (text, token) in [
        ("[1-x]", "1-x"),
        ("a", "a"),
        ("1-2-3", "1-2-3"),
        ("-3", "-3"),
    ] {
        let err = IterationRange::parse(text).unwrap_err();
        let message = err.to_string();
        assert!(message.contains(&format!("{token:?}")), "{message}");
        assert!(message.contains("A-B"), "{message}");
    }
    let err = IterationRange::parse("[5-2]").unwrap_err();
    assert!(matches!(err, FilterError::ReversedIterationRange { .. }));
}

#[test]
fn iterations_count_from_one_per_kernel_name() {
    let s = selector(None, None, Some("[2-3]"));
    let picks: Vec<bool> = ["a", "a", "b", "a", "b", "a", "b"]
        .iter()
        .map(|n| s.select(n))
        .collect();
    // a: 1 2 3 4 -> F T T F; b: 1 2 3 -> F T T
    assert_eq!(picks, vec![false, true, false, true, true, false, true]);
}

#[test]
fn include_then_exclude_searched_in_the_name() {
    let s = selector(Some("saxpy|scale"), Some("^scale_half"), None);
    assert!(s.select("void saxpy<float>(int)"));
    assert!(s.select("scale_all"));
    assert!(!s.select("scale_half"));
    assert!(!s.select("reduce"));
}

#[test]
fn filtered_out_names_do_not_advance_iterations() {
    let s = selector(None, Some("skip"), Some("1"));
    assert!(!s.select("skip_me"));
    assert!(s.select("keep"));
    assert!(!s.select("keep"));
}

#[test]
fn bad_regex_is_a_one_line_error_naming_the_option() {
    let err = KernelSelector::new(&KernelFilter {
        include_regex: Some("(".into()),
        ..KernelFilter::default()
    })
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("--kernel-include-regex \"(\""), "{err}");
    assert!(!err.contains('\n'), "{err}");
}
