//! The reference app's graph launch, run as kreplay runs one on a GPU: node by node, each kernel
//! node a dispatch of its own measured in every pass, in every output (JSON, CSV, and rocpd's
//! `kreplay_dispatch_pass` and `kreplay_pass_counters`), under the graph launch's one
//! correlation id; its memcpy and memset nodes run once. No graph launch is declined, and
//! nothing says one was.

use crate::common::*;
use kreplay_format::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The dispatch ids of the graph's kernel nodes: the one correlation id that several dispatches
/// share, from the database's records.
fn graph_dispatches(run: &RunData) -> (u64, Vec<u64>) {
    let mut by_correlation: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for d in run.processes.iter().flat_map(|p| &p.dispatches) {
        by_correlation
            .entry(d.correlation_id)
            .or_default()
            .insert(d.dispatch_id);
    }
    let graphs: Vec<_> = by_correlation
        .into_iter()
        .filter(|(_, ids)| ids.len() > 1)
        .collect();
    assert_eq!(graphs.len(), 1, "one graph launch: {graphs:?}");
    let (correlation, ids) = graphs.into_iter().next().unwrap();
    (correlation, ids.into_iter().collect())
}

/// `SELECT` rows of the run's database, each column as text.
fn rows(db: &Path, sql: &str, id: u64) -> Vec<Vec<String>> {
    let connection = rusqlite::Connection::open(db).unwrap();
    let mut statement = connection.prepare(sql).unwrap();
    let columns = statement.column_count();
    statement
        .query_map([id as i64], |row| {
            (0..columns)
                .map(|i| {
                    let value: rusqlite::types::Value = row.get(i)?;
                    Ok(match value {
                        rusqlite::types::Value::Integer(v) => v.to_string(),
                        rusqlite::types::Value::Text(v) => v,
                        other => format!("{other:?}"),
                    })
                })
                .collect()
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn the_reference_apps_graph_kernel_nodes_have_every_pass_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(
        dir.path(),
        &two_groups_replay(&["-f", "json", "csv", "rocpd", "-d", "DIR", "-o", "out"]),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("verification PASSED"), "{stdout}");
    assert!(!stderr.contains("graph launch"), "{stderr}");
    let d = dir.path().join("DIR");
    let db_path = d.join("out_results.db");
    let run = read_databases(std::slice::from_ref(&db_path)).unwrap();
    let (correlation, graph) = graph_dispatches(&run);

    // The database: scale_add then accumulate, each replayed in both passes.
    let costs: Vec<&ReplayCost> = run.processes.iter().flat_map(|p| &p.costs).collect();
    assert!(costs
        .iter()
        .all(|c| c.outcome != ReplayOutcome::DeclinedGraphLaunch));
    let names: BTreeMap<u64, String> = run
        .processes
        .iter()
        .flat_map(|p| &p.kernels)
        .map(|k| (k.kernel_id, k.demangled_name.clone()))
        .collect();
    let mut kernels = Vec::new();
    for id in &graph {
        let cost = costs.iter().find(|c| c.dispatch_id == *id).unwrap();
        assert_eq!(cost.outcome, ReplayOutcome::Replayed, "dispatch {id}");
        assert_eq!(cost.passes, 2, "dispatch {id}");
        let records: Vec<&DispatchRecord> = run
            .processes
            .iter()
            .flat_map(|p| &p.dispatches)
            .filter(|r| r.dispatch_id == *id)
            .collect();
        let passes: BTreeSet<Option<u32>> = records.iter().map(|r| r.replay_pass).collect();
        assert_eq!(passes, BTreeSet::from([Some(0), Some(1)]), "dispatch {id}");
        kernels.push(names[&records[0].kernel_id].clone());
    }
    assert!(
        kernels[0].starts_with("scale_add") && kernels[1].starts_with("accumulate"),
        "{kernels:?}"
    );

    // The JSON: a record per pass, with that pass's group.
    let json = read_json_counter_records(d.join("out_results.json")).unwrap();
    for id in &graph {
        let mut seen: Vec<(u32, Vec<String>)> = json
            .iter()
            .filter(|r| r.dispatch_id == *id)
            .map(|r| (r.replay_pass.unwrap(), r.counters.keys().cloned().collect()))
            .collect();
        seen.sort();
        let group = |a: &str, b: &str| {
            let mut names = vec![a.to_string(), b.to_string()];
            names.sort();
            names
        };
        assert_eq!(
            seen,
            vec![(0, group(W, I)), (1, group(W, C))],
            "JSON of dispatch {id}"
        );
    }

    // The CSV: a row per pass and counter (W, in both groups, twice), under the graph launch's
    // correlation id.
    let mut reader = csv::Reader::from_path(d.join("out_counter_collection.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (id_col, correlation_col, counter_col) = (
        col("Dispatch_Id"),
        col("Correlation_Id"),
        col("Counter_Name"),
    );
    let mut csv_rows: BTreeMap<u64, BTreeMap<String, usize>> = BTreeMap::new();
    for row in reader.records() {
        let row = row.unwrap();
        let id: u64 = row[id_col].parse().unwrap();
        if graph.contains(&id) {
            assert_eq!(row[correlation_col].parse::<u64>().unwrap(), correlation);
            *csv_rows
                .entry(id)
                .or_default()
                .entry(row[counter_col].to_string())
                .or_default() += 1;
        }
    }
    let expected = BTreeMap::from([(W.to_string(), 2), (I.to_string(), 1), (C.to_string(), 1)]);
    for id in &graph {
        assert_eq!(csv_rows[id], expected, "CSV of dispatch {id}");
    }

    // rocpd: kreplay's own tables keep every pass of each node.
    for id in &graph {
        let passes = rows(
            &db_path,
            "SELECT DP.replay_pass FROM kreplay_dispatch_pass DP
             JOIN rocpd_kernel_dispatch K ON K.id = DP.dispatch_row
             WHERE K.dispatch_id = ?1 ORDER BY DP.replay_pass",
            *id,
        );
        assert_eq!(passes, vec![vec!["0"], vec!["1"]], "dispatch {id}");
        let counters = rows(
            &db_path,
            "SELECT replay_pass, counter_name, correlation_id FROM kreplay_pass_counters
             WHERE dispatch_id = ?1 ORDER BY replay_pass, counter_name",
            *id,
        );
        let c = correlation.to_string();
        let row = |pass: &str, name: &str| vec![pass.to_string(), name.to_string(), c.clone()];
        let mut expected = vec![row("0", W), row("0", I), row("1", W), row("1", C)];
        expected.sort();
        assert_eq!(counters, expected, "kreplay_pass_counters of dispatch {id}");
    }
}
