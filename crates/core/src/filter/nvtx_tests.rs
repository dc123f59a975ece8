use super::*;

fn filter(include: &[&str], exclude: &[&str]) -> NvtxFilter {
    let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    NvtxFilter::new(&own(include), &own(exclude))
        .unwrap()
        .unwrap()
}

/// A state with push/pop ranges `stack` (outermost first; `domain@name` outside the default
/// domain) and open start/end ranges `started`.
fn admits(f: &NvtxFilter, stack: &[&str], started: &[&str]) -> bool {
    let push_pop: Vec<(&str, &str)> = stack.iter().map(|e| split(e)).collect();
    let start_end: Vec<(&str, &str)> = started.iter().map(|e| split(e)).collect();
    f.admits(&NvtxState {
        push_pop: &push_pop,
        start_end: &start_end,
    })
}

fn split(entry: &str) -> (&str, &str) {
    entry.split_once('@').unwrap_or(("", entry))
}

fn include(config: &str, stack: &[&str], started: &[&str]) -> bool {
    admits(&filter(&[config], &[]), stack, started)
}

#[test]
fn a_push_pop_range_matches_anywhere_in_the_stack_and_nested_ranges_inside_it() {
    assert!(include("A_range/", &["A_range"], &[]));
    assert!(include("A_range/", &["outer", "A_range", "inner"], &[]));
    assert!(!include("A_range/", &[], &[]));
    assert!(!include("A_range/", &["B range"], &[]));
    // A start/end range of that name is not a push/pop range.
    assert!(!include("A_range/", &[], &["A_range"]));
    // Names may hold spaces, and are matched whole.
    assert!(include("B range/", &["B range"], &[]));
    assert!(!include("B/", &["B range"], &[]));
}

#[test]
fn nesting_steps_say_what_lies_between() {
    let stack = ["A", "x", "y", "B", "C"];
    assert!(include("A/*/B", &stack, &[]));
    assert!(include("B/C", &stack, &[]), "C directly inside B");
    assert!(!include("A/B", &stack, &[]), "B is not directly inside A");
    assert!(!include("B/A", &stack, &[]), "the order is outermost first");
    assert!(include("y/+/C", &stack, &[]), "exactly one range between");
    assert!(!include("A/+/B", &stack, &[]));
    assert!(include("A/+/+/B", &stack, &[]));
    assert!(include("[A", &stack, &[]), "A at the bottom");
    assert!(!include("[x", &stack, &[]));
    assert!(include("C]", &stack, &[]), "C at the top");
    assert!(!include("B]", &stack, &[]));
    assert!(include("[A/*/C]", &stack, &[]));
    assert!(!include("[A/*/B]", &stack, &[]));
    assert!(include("A/*/C]", &stack, &[]));
}

#[test]
fn domains_have_stacks_of_their_own() {
    // The thread's stack mixes domains; each domain's ranges nest among themselves.
    let stack = ["step", "io@read", "forward", "io@parse"];
    assert!(
        include("step/forward", &stack, &[]),
        "the default domain's stack"
    );
    assert!(include("io@read/parse", &stack, &[]));
    assert!(include("io@parse]", &stack, &[]));
    assert!(
        include("forward]", &stack, &[]),
        "top of the default domain's stack"
    );
    assert!(
        !include("read/", &stack, &[]),
        "no domain: the default domain"
    );
    assert!(!include("io@step/", &stack, &[]));
    assert!(include("regex:^i@pars/", &stack, &[]));
    assert!(!include("regex:^x@pars/", &stack, &[]));
}

#[test]
fn start_end_ranges_are_names_without_slash_and_a_comma_asks_for_all() {
    assert!(include("A_range", &[], &["A_range"]));
    assert!(
        !include("A_range", &["A_range"], &[]),
        "a push/pop range is not one"
    );
    assert!(include(
        "A_range,B range",
        &[],
        &["B range", "x", "A_range"]
    ));
    assert!(!include("A_range,B range", &[], &["A_range"]));
    assert!(include("Domain-A@A_range", &[], &["Domain-A@A_range"]));
    assert!(!include("Domain-A@A_range", &[], &["A_range"]));
    assert!(!include("A_range", &[], &["Domain-A@A_range"]));
}

#[test]
fn includes_are_alternatives_and_excludes_win() {
    let either = filter(&["A", "B"], &[]);
    assert!(admits(&either, &[], &["A"]));
    assert!(admits(&either, &[], &["B"]));
    assert!(!admits(&either, &[], &["C"]));
    let all_but = filter(&[], &["A/"]);
    assert!(admits(&all_but, &[], &[]));
    assert!(admits(&all_but, &["B"], &[]));
    assert!(!admits(&all_but, &["A", "B"], &[]));
    let a_not_top_b = filter(&["A_range/"], &["B range]"]);
    assert!(admits(&a_not_top_b, &["A_range"], &[]));
    assert!(admits(&a_not_top_b, &["A_range", "B range", "C"], &[]));
    assert!(!admits(&a_not_top_b, &["A_range", "B range"], &[]));
}

#[test]
fn regular_expressions_are_searched_in_domain_and_range_names() {
    assert!(include("regex:Range[0-9]/", &["my Range7"], &[]));
    assert!(!include("regex:^Range[0-9]/", &["my Range7"], &[]));
    assert!(include(
        "regex:Domain[A-Z]@Range[0-9]/",
        &["DomainQ@Range1"],
        &[]
    ));
    assert!(!include("regex:Domain[A-Z]@Range[0-9]/", &["Range1"], &[]));
    // `/[` and `/]` at the ends of the range part belong to the expression.
    assert!(include(
        "regex:[0-9]domainA@/[0-9]rangeA,RangeC[0-9/]",
        &[],
        &["1domainA@5rangeA", "1domainA@RangeC3"]
    ));
    assert!(include("regex:step \\d+/", &["step 12"], &[]));
    assert!(include(
        "regex:layer\\.[0-9]+/*/mlp",
        &["layer.3", "x", "mlp"],
        &[]
    ));
}

#[test]
fn escapes_put_quantifiers_into_names() {
    assert!(include("A_range\\[i\\]", &[], &["A_range[i]"]));
    assert!(include("a\\/b/", &["a/b"], &[]));
    assert!(include("d@x\\@y/", &["d@x@y"], &[]));
    assert!(include("p\\,q", &[], &["p,q"]));
    assert!(include("\\*/", &["*"], &[]), "an escaped * is a name");
    assert!(include("regex:^A\\[0\\]/", &["A[0]"], &[]));
}

#[test]
fn bad_configurations_say_what_is_wrong() {
    let err = |text: &str| {
        NvtxConfig::parse(NVTX_INCLUDE, text)
            .unwrap_err()
            .to_string()
    };
    assert!(err("").contains("names no range"), "{}", err(""));
    assert!(err("A//B").contains("empty"), "{}", err("A//B"));
    assert!(err("/A").contains("empty"));
    assert!(err("A,,B").contains("empty"));
    assert!(err("@A").contains("no domain"));
    assert!(err("D1@A,D2@B").contains("different domains"));
    assert!(err("A/B,C").contains("separate options"));
    assert!(err("*/").contains("names no range"));
    let bad_regex = err("regex:(unclosed/");
    assert!(
        bad_regex.contains("not a valid regular expression"),
        "{bad_regex}"
    );
    assert!(bad_regex.starts_with("--nvtx-include \"regex:(unclosed/\": "));
    assert!(!bad_regex.contains('\n'));
    let exclude = NvtxFilter::new(&[], &["A//".to_string()]).unwrap_err();
    assert!(exclude.to_string().starts_with("--nvtx-exclude"));
    assert!(NvtxFilter::new(&[], &[]).unwrap().is_none());
}
