use super::*;
use std::collections::BTreeMap;

/// A fixed pseudo-random list of (name, duration), names repeating, some with 0 bytes and
/// non-ASCII characters, some prefixes of others.
fn durations() -> Vec<(String, u64)> {
    let odd = ["a", "a\0", "a\0b", "ab", "é", "\u{0}", "", "zz\u{1F600}"];
    (0..30_000u64)
        .map(|i| {
            let name = match i % 7 {
                0 => odd[(i as usize / 7) % odd.len()].to_string(),
                _ => format!("step {}", (i * 7919) % 4_001),
            };
            (name, (i * 104_729) % 1_000_003)
        })
        .collect()
}

fn expected() -> Vec<(String, DurationStats)> {
    let mut by_name: BTreeMap<String, DurationStats> = BTreeMap::new();
    for (name, ns) in durations() {
        by_name.entry(name).or_default().add(ns);
    }
    by_name.into_iter().collect()
}

/// `durations()` tallied with a budget of `budget` bytes; whether it spilled.
fn tallied(budget: usize) -> (Names, bool) {
    TEST_TALLY_BUDGET.with(|b| b.set(budget));
    let dir = tempfile::tempdir().unwrap();
    let mut tally = NameTally::new(Some(dir.path()));
    for (name, ns) in durations() {
        tally.add(&name, ns);
    }
    let spilled = tally.spilled.is_some();
    let names = tally.finish().unwrap();
    TEST_TALLY_BUDGET.with(|b| b.set(TALLY_BUDGET));
    (names, spilled)
}

#[test]
fn names_come_in_name_order_combined_in_memory_or_spilled() {
    let expected = expected();
    let total = crate::stats::merged(expected.iter().map(|(_, s)| s));
    let widest = expected.iter().map(|(n, _)| n.chars().count()).max();
    // In memory; spilled a few times; spilled at every few names (many sort runs).
    for (budget, spills) in [(usize::MAX, false), (200_000, true), (2_000, true)] {
        let (names, spilled) = tallied(budget);
        assert_eq!(spilled, spills, "budget {budget}");
        assert_eq!(names.to_vec(), expected, "budget {budget}");
        // Read again: the same.
        assert_eq!(names.to_vec(), expected, "budget {budget}, read twice");
        assert_eq!((names.len(), *names.total()), (expected.len(), total));
        assert_eq!(Some(names.widest()), widest);
    }
}

#[test]
fn ranked_is_largest_total_first_equal_totals_by_name_either_way() {
    let mut expected = expected();
    // Equal totals among names: a stable sort keeps their name order.
    expected.sort_by_key(|(_, s)| std::cmp::Reverse(s.sum));
    for budget in [usize::MAX, 2_000] {
        let (names, _) = tallied(budget);
        TEST_TALLY_BUDGET.with(|b| b.set(budget));
        let ranked = names.ranked(None).unwrap();
        TEST_TALLY_BUDGET.with(|b| b.set(TALLY_BUDGET));
        assert_eq!(ranked.to_vec(), expected, "budget {budget}");
    }
}

#[test]
fn equal_totals_keep_name_order_when_ranked_from_a_file() {
    TEST_TALLY_BUDGET.with(|b| b.set(300));
    let mut tally = NameTally::new(None);
    for name in ["d", "b", "c", "a", "e"] {
        tally.add(name, if name == "e" { 9 } else { 5 });
    }
    assert!(tally.spilled.is_some());
    let ranked = tally.finish().unwrap().ranked(None).unwrap();
    TEST_TALLY_BUDGET.with(|b| b.set(TALLY_BUDGET));
    let order: Vec<String> = ranked.to_vec().into_iter().map(|(n, _)| n).collect();
    assert_eq!(order, ["e", "a", "b", "c", "d"]);
}

#[test]
fn names_added_with_their_statistics_combine_with_those_added_one_by_one() {
    let (spilled, _) = tallied(2_000);
    let mut tally = NameTally::default();
    tally.add_names(&spilled).unwrap();
    tally.add("a", 1);
    let mut expected = expected();
    let a = expected.iter_mut().find(|(n, _)| n == "a").unwrap();
    a.1.add(1);
    assert_eq!(tally.finish().unwrap().to_vec(), expected);
    assert!(NameTally::default().is_empty());
    assert!(NameTally::default().finish().unwrap().is_empty());
}

#[test]
fn a_malformed_spilled_name_is_an_error_not_a_panic() {
    assert!(split_name_key(b"abc").is_err());
    assert!(split_name_key(b"a\0\x02").is_err());
    let mut item = Vec::new();
    push_name_key(&mut item, "x\0y");
    assert!(split_name_key(&item).is_err(), "statistics missing");
    push_stats(&mut item, &DurationStats::default());
    assert_eq!(split_name_key(&item).unwrap().0, "x\0y");
}
