use super::*;
use crate::db::read_databases;
use crate::json_out::{read_json_counter_records, JsonCounterRecord};
use crate::output::{write_outputs, OutputFormat};
use crate::{DbWriter, RecordSink};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// Finite values of every magnitude and sign (JSON cannot hold NaN or infinities).
fn finite() -> impl Strategy<Value = f64> {
    use proptest::num::f64::*;
    POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO
}

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,16}"
}

prop_compose! {
    fn any_run()(
        pid in any::<u32>(),
        ppid in any::<u32>(),
        hostname in text(),
        command in prop::collection::vec(text(), 0..4),
        start_ns in any::<u64>(),
        end_ns in any::<u64>(),
        agent_ids in prop::collection::btree_set(any::<u64>(), 1..3),
        kernel_ids in prop::collection::btree_set(any::<u64>(), 1..4),
        counter_names in prop::collection::btree_set("[A-Za-z_.]{1,12}", 1..5),
        kernel_text in prop::collection::vec((text(), text(), any::<[u32; 4]>()), 4),
        dispatches in prop::collection::vec((
            any::<[u64; 6]>(),
            any::<Option<u32>>(),
            (any::<usize>(), any::<usize>()),
            [1..=u32::MAX, 1..=u32::MAX, 1..=u32::MAX],
            [1..=1024u32, 1..=1024u32, 1..=64u32],
            any::<u32>(),
            prop::collection::btree_map(any::<usize>(), finite(), 0..4),
            prop::collection::vec(text(), 0..3),
        ), 0..12),
        costs in prop::collection::vec((any::<[u64; 9]>(), 0..14usize, 0..3usize, any::<u32>(), prop::collection::vec(any::<u64>(), 0..4), any::<(bool, [u32; 4])>()), 0..4),
        cache_all in any::<bool>(),
        warnings in prop::collection::vec(text(), 0..3),
    ) -> Vec<Record> {
        let agent_ids: Vec<u64> = agent_ids.into_iter().collect();
        let kernel_ids: Vec<u64> = kernel_ids.into_iter().collect();
        let counter_names: Vec<String> = counter_names.into_iter().collect();
        let mut records = vec![Record::Process(ProcessInfo {
            pid, ppid, hostname, command, start_ns, end_ns, rank: None, size: None,
            cache_control: if cache_all { CacheControl::All } else { CacheControl::None },
            sections: Vec::new(),
            kernel_rename: false,
        mangled_kernels: false,
        truncate_kernels: false,
        })];
        for (i, agent_id) in agent_ids.iter().enumerate() {
            records.push(Record::Agent(AgentInfo {
                agent_id: *agent_id,
                name: format!("GPU {i}"),
                chip: "GH100".to_string(),
                sm_count: 132 + i as u32,
                global_memory_bytes: u64::MAX - i as u64,
                pci_location: format!("0000:{i:02x}:00"),
                max_threads_per_sm: 2048 + i as u32,
                shared_memory_per_sm_bytes: 65_536,
            }));
        }
        for (kernel_id, (mangled, demangled, numbers)) in kernel_ids.iter().zip(&kernel_text) {
            records.push(Record::KernelSymbol(KernelSymbol {
                kernel_id: *kernel_id,
                code_object_id: 0,
                mangled_name: mangled.clone(),
                demangled_name: demangled.clone(),
                registers: numbers[0],
                static_shared_bytes: numbers[1],
                local_bytes: numbers[2],
                param_bytes: numbers[3],
            }));
        }
        for name in &counter_names {
            records.push(Record::Counter(CounterInfo {
                name: name.clone(),
                metric: format!("sm__{name}.sum"),
                description: format!("{name}, \"quoted\""),
                unit: "warp".to_string(),
            }));
        }
        for (ids, replay_pass, (agent, kernel), grid, block, dynamic_shared_bytes, values, ranges) in dispatches {
            let counters: BTreeMap<usize, f64> =
                values.into_iter().map(|(i, v)| (i % counter_names.len(), v)).collect();
            records.push(Record::Dispatch(DispatchRecord {
                dispatch_id: ids[0],
                replay_pass,
                correlation_id: ids[1],
                agent_id: agent_ids[agent % agent_ids.len()],
                stream_id: ids[2],
                // A dispatch is its process's: the database keeps it under the process row.
                pid,
                tid: ids[3],
                kernel_id: kernel_ids[kernel % kernel_ids.len()],
                grid,
                block,
                dynamic_shared_bytes,
                start_ns: ids[4],
                end_ns: ids[5],
                counters: counters
                    .into_iter()
                    .map(|(i, value)| CounterSample { name: counter_names[i].as_str().into(), value })
                    .collect(),
                ranges,
            }));
        }
        let outcomes = [
            ReplayOutcome::Replayed, ReplayOutcome::SinglePass, ReplayOutcome::StoppedEarly,
            ReplayOutcome::DeclinedGraphLaunch, ReplayOutcome::DeclinedStreamCapture,
            ReplayOutcome::DeclinedMultiDevice, ReplayOutcome::DeclinedSnapshotTooLarge,
            ReplayOutcome::DeclinedError, ReplayOutcome::Filtered,
            ReplayOutcome::DeclinedDevicePrintf, ReplayOutcome::DeclinedDeviceHeap,
            ReplayOutcome::DeclinedCollective, ReplayOutcome::DeclinedPageableHost,
            ReplayOutcome::DeclinedPeerMemory,
        ];
        let stagings = [Staging::None, Staging::Device, Staging::Host];
        for (n, outcome, staging, passes, pass_ns, (flushed, mhz)) in costs {
            records.push(Record::ReplayCost(ReplayCost {
                dispatch_id: n[0], agent_id: n[1], outcome: outcomes[outcome], passes,
                bytes_tracked: n[2], bytes_snapshotted: n[3], bytes_restored: n[4],
                staging: stagings[staging], drain_ns: n[5], snapshot_ns: n[6], pass_ns,
                restore_ns: n[7], timing_execution_ns: n[8],
                cache: if flushed { CacheState::Flushed } else { CacheState::AsLeft },
                sm_clock_mhz: [mhz[0], mhz[1]], memory_clock_mhz: [mhz[2], mhz[3]],
            }));
        }
        records.extend(warnings.into_iter().map(|message| Record::Warning(Warning { message })));
        records
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Any run, with ids over the whole u64 range and any text, survives the database, and its
    /// JSON counter records are exactly its dispatches' counters.
    #[test]
    fn any_run_round_trips_through_the_database_and_json(records in any_run()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("any.db");
        let writer = DbWriter::create(&path, || {}).unwrap();
        for record in &records {
            writer.send(record.clone());
        }
        writer.finish().unwrap();
        let expected = RunData::from_records(records);
        let read = read_databases(std::slice::from_ref(&path)).unwrap();
        prop_assert_eq!(&read, &expected);

        let json = write_outputs(&read, dir.path(), "any", &[OutputFormat::Json]).unwrap();
        let process = &expected.processes[0];
        // A kernel-replay document gives every record a pass (0 for a dispatch run once).
        let replayed = expected
            .processes
            .iter()
            .flat_map(|p| &p.dispatches)
            .any(|d| d.replay_pass.is_some());
        let from_run: Vec<JsonCounterRecord> = process
            .dispatches
            .iter()
            .filter(|d| !d.counters.is_empty())
            .map(|d| JsonCounterRecord {
                dispatch_id: d.dispatch_id,
                replay_pass: d.replay_pass.or(replayed.then_some(0)),
                kernel_name: process.kernel(d.kernel_id).unwrap().demangled_name.clone(),
                counters: d.counters.iter().map(|c| (c.name.to_string(), c.value)).collect(),
            })
            .collect();
        prop_assert_eq!(read_json_counter_records(&json[0]).unwrap(), from_run);
    }
}

#[test]
fn non_finite_values_survive_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nan.db");
    let mut records = crate::testdata::recorded_run(4);
    if let Record::Dispatch(d) = &mut records[7] {
        d.counters[0].value = f64::NAN;
        d.counters[1].value = f64::INFINITY;
    }
    let writer = DbWriter::create(&path, || {}).unwrap();
    for record in &records {
        writer.send(record.clone());
    }
    writer.finish().unwrap();
    let read = read_databases(&[path]).unwrap();
    let values = &read.processes[0].dispatches[0].counters;
    assert!(values[0].value.is_nan());
    assert_eq!(values[1].value, f64::INFINITY);
    let names: BTreeSet<&str> = values.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, BTreeSet::from(["SQ_WAVES", "SQ_INSTS_VALU"]));
}

/// What a watched run handed its observer: (process, dispatch id, pass) and (process, dispatch
/// id), in the order handed.
#[derive(Default, Debug, PartialEq)]
struct Handed {
    dispatches: Vec<(usize, u64, Option<u32>)>,
    costs: Vec<(usize, u64)>,
}

impl RecordObserver for Handed {
    fn dispatches(&mut self, process: usize, records: &[DispatchRecord]) {
        let seen = records
            .iter()
            .map(|d| (process, d.dispatch_id, d.replay_pass));
        self.dispatches.extend(seen);
    }

    fn costs(&mut self, process: usize, records: &[ReplayCost]) {
        self.costs
            .extend(records.iter().map(|c| (process, c.dispatch_id)));
    }
}

#[test]
fn a_watched_run_hands_each_record_once_in_order_however_often_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for pid in [4, 5] {
        let path = dir.path().join(format!("{pid}.db"));
        let writer = DbWriter::create(&path, || {}).unwrap();
        for record in crate::testdata::recorded_run(pid) {
            writer.send(record);
        }
        writer.finish().unwrap();
        paths.push(path);
    }
    let in_memory = read_databases(&paths).unwrap();
    let mut expected = Handed::default();
    for (index, process) in in_memory.processes.iter().enumerate() {
        expected.dispatches(index, &process.dispatches);
        expected.costs(index, &process.costs);
    }
    assert!(!expected.dispatches.is_empty() && !expected.costs.is_empty());

    // Read by nothing but the watcher.
    let mut run = crate::open_databases(&paths).unwrap();
    let watcher = run.watch(Handed::default());
    watcher.complete(&run);
    assert_eq!(*watcher.observer(), expected);

    // Read partly, by two writers, into memory, then completed: still each record once.
    let mut run = crate::open_databases(&paths).unwrap();
    let watcher = run.watch(Handed::default());
    assert!(run.is_kernel_replay());
    let _ = run.processes[1].each_cost().next();
    write_outputs(
        &run,
        dir.path(),
        "w",
        &[OutputFormat::Csv, OutputFormat::Json],
    )
    .unwrap();
    let _ = run.in_memory().unwrap();
    watcher.complete(&run);
    // In record order within a process; the processes in the order they were read.
    let mut handed = watcher.observer();
    handed.costs.sort_by_key(|(process, _)| *process);
    handed.dispatches.sort_by_key(|(process, ..)| *process);
    assert_eq!(*handed, expected);
}
