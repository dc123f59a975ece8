use super::*;

#[test]
fn passes_are_two_counters_each() {
    let catalog = SimCatalog::new();
    assert_eq!(catalog.passes(&[]).unwrap(), 0);
    assert_eq!(catalog.passes(&["sim__warps_launched.sum"]).unwrap(), 1);
    assert_eq!(
        catalog
            .passes(&["sim__warps_launched.sum", "sim__inst_executed.sum"])
            .unwrap(),
        1
    );
    assert_eq!(
        catalog
            .passes(&[
                "sim__warps_launched.sum",
                "sim__inst_executed.sum",
                "sim__cycles_elapsed.max"
            ])
            .unwrap(),
        2
    );
    assert_eq!(
        catalog
            .passes(&["sim__warps_launched.sum", "sim__warps_launched.sum"])
            .unwrap(),
        1
    );
}

#[test]
fn unknown_names_suggest_close_ones() {
    let catalog = SimCatalog::new();
    let err = catalog.describe("sim__warp_launched.sum").unwrap_err();
    match &err {
        CatalogError::UnknownMetric {
            chip, suggestions, ..
        } => {
            assert_eq!(chip, "SIM");
            assert_eq!(
                suggestions.first().map(String::as_str),
                Some("sim__warps_launched.sum")
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err
        .to_string()
        .contains("did you mean sim__warps_launched.sum"));
    assert!(catalog.passes(&["nope.sum"]).is_err());
}

#[test]
fn every_listed_metric_is_described_and_named_back() {
    let catalog = SimCatalog::new();
    for name in catalog.metric_names().unwrap() {
        let description = catalog.describe(&name).unwrap();
        assert_eq!(description.name, name);
        assert!(!description.unit.is_empty());
        let metric = SimMetric::from_name(&name).unwrap();
        assert_eq!(metric.name(), name);
    }
    assert!(!SimMetric::CyclesElapsed.is_deterministic());
    assert!(SimMetric::WarpsLaunched.is_deterministic());
}
