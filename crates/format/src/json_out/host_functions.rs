//! `host_functions`: rocprofv3's host functions (rocprofiler-sdk's
//! `code_object_host_kernel_symbol_register` record: HIP registers each kernel's host stub),
//! made from what kreplay records of a CUDA application: each runtime launch call's `func`
//! argument (`cudaLaunchKernel`, the kernel's host stub) with the kernel its dispatch ran, one
//! entry per host function, numbered from 1 in the order first launched and indexed by that id
//! as rocprofv3 indexes them (`host_functions[host_function_id]`; slot 0 is its placeholder). The
//! arguments are recorded under `-r`/`-s` only: without them the list is empty.

use super::parts::{handle, xyz};
use super::tables::Kernels;
use crate::api::{ApiDomain, ApiRecord};
use crate::naming::truncated_name;
use crate::run::ProcessRun;
use crate::spill::{Key, Sorter};
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io;
use std::path::Path;

/// `sizeof(rocprofiler_callback_tracing_code_object_host_kernel_symbol_register_data_t)` on
/// x86-64: six 64-bit fields, a name pointer, a 32-bit limit, four dim3s, a 64-bit size.
const SIZE_HOST_FUNCTION: u64 = 120;

/// The process's host functions: (host stub address, our kernel id), in id order (from 1).
pub(super) struct HostFunctions(Vec<(u64, u64)>);

/// Whether `function` is the runtime's kernel launch (per-thread-stream form or not).
fn is_runtime_launch(function: &str) -> bool {
    function == "cudaLaunchKernel" || function.starts_with("cudaLaunchKernel_")
}

/// Key of the join of launches and dispatches: correlation id, launch (0) or dispatch (1),
/// place in its stream.
const JOIN_KEY: usize = 8 + 1 + 8;

/// The runtime launch calls' `func` arguments, gathered as the document writes the runtime
/// calls (`hip_api`, before `host_functions`: the arguments are read once), waiting in an
/// external sort by correlation id (a launch per dispatch: not in memory) for the dispatches.
pub(super) struct Launches {
    sorter: RefCell<Sorter>,
    count: Cell<u64>,
    /// The first error of the sort's files, reported by [`HostFunctions::scan`].
    failed: RefCell<Option<io::Error>>,
}

impl Launches {
    pub(super) fn new(spill_dir: &Path) -> Launches {
        // Half a sorter's usual budget: the JSON holds its summary's statistics besides (a traced
        // run's JSON at 10^6 dispatches peaked at 100-102 MiB with 16 MiB, 90-92 with 8, as fast).
        let budget = crate::spill::budget() / 2;
        Launches {
            sorter: RefCell::new(Sorter::with_budget(JOIN_KEY, spill_dir, budget)),
            count: Cell::new(0),
            failed: RefCell::new(None),
        }
    }

    /// Notes `call` if it is a runtime launch with its `func` argument.
    pub(super) fn see(&self, call: &ApiRecord) {
        if call.domain != ApiDomain::Runtime || !is_runtime_launch(&call.function) {
            return;
        }
        let Some(func) = call.args.number("func") else {
            return;
        };
        let key = Key::new()
            .u64(call.correlation_id)
            .u8(0)
            .u64(self.count.get());
        self.count.set(self.count.get() + 1);
        let pushed = (self.sorter.borrow_mut()).push_bytes(key.bytes(), &func.to_be_bytes());
        if let Err(e) = pushed {
            self.failed.borrow_mut().get_or_insert(e);
        }
    }
}

/// The big-endian integer at `at` of `bytes`.
fn be(bytes: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

impl HostFunctions {
    /// One pass over the process's dispatches, when it recorded launch calls with their
    /// arguments (`launches`, none otherwise), joined to them by correlation id through the
    /// external sort: each host function with the kernel of its first dispatch, in the order
    /// of those dispatches (a launch's correlation id given twice: its last call's function).
    pub(super) fn scan(run: &ProcessRun, launches: Launches) -> io::Result<HostFunctions> {
        if let Some(e) = launches.failed.into_inner() {
            return Err(e);
        }
        if launches.count.get() == 0 {
            return Ok(HostFunctions(Vec::new()));
        }
        let mut sorter = launches.sorter.into_inner();
        for (place, dispatch) in run.each_dispatch().enumerate() {
            let dispatch = dispatch.map_err(io::Error::other)?;
            let key = Key::new()
                .u64(dispatch.correlation_id)
                .u8(1)
                .u64(place as u64);
            sorter.push_bytes(key.bytes(), &dispatch.kernel_id.to_be_bytes())?;
        }
        // Per host function: its first dispatch's place and kernel.
        let mut first: HashMap<u64, (u64, u64)> = HashMap::new();
        let mut launch: (u64, Option<u64>) = (0, None);
        sorter.drain(|key, value| {
            let (correlation, place, value) = (be(key, 0), be(key, 9), be(value, 0));
            if launch.0 != correlation {
                launch = (correlation, None);
            }
            match (key[8], launch.1) {
                (0, _) => launch.1 = Some(value),
                (_, Some(func)) => {
                    let entry = first.entry(func).or_insert((place, value));
                    if place < entry.0 {
                        *entry = (place, value);
                    }
                }
                (_, None) => {}
            }
            Ok(())
        })?;
        let mut found: Vec<(u64, u64, u64)> = (first.into_iter())
            .map(|(func, (place, kernel))| (place, func, kernel))
            .collect();
        found.sort_unstable();
        Ok(HostFunctions(
            found
                .into_iter()
                .map(|(_, func, kernel)| (func, kernel))
                .collect(),
        ))
    }

    /// The entries, slot 0 the placeholder; none without host functions.
    pub(super) fn entries<'b>(
        &'b self,
        run: &'b ProcessRun,
        kernels: &'b Kernels,
    ) -> impl Iterator<Item = Value> + 'b {
        let placeholder = (!self.0.is_empty()).then(|| entry(0, 0, None));
        let entries = self
            .0
            .iter()
            .enumerate()
            .map(move |(index, (func, kernel_id))| {
                let (slot, code_object, symbol) = kernels.symbol(*kernel_id);
                let names = symbol.map(|k| {
                    let formatted = crate::facts::kernel_name(&run.process, k);
                    (
                        k.mangled_name.as_str(),
                        formatted,
                        k.demangled_name.as_str(),
                    )
                });
                let id = index as u64 + 1;
                entry(id, *func, Some((slot, code_object, names)))
            });
        placeholder.into_iter().chain(entries)
    }
}

type Names<'a> = Option<(&'a str, &'a str, &'a str)>;

/// Host function `id` at address `func` of the kernel (its JSON id, its code object's, its
/// mangled, formatted and demangled names); without a kernel, rocprofv3's placeholder.
fn entry(id: u64, func: u64, kernel: Option<(u64, u64, Names)>) -> Value {
    let (kernel_id, code_object_id, names) = kernel.unwrap_or((0, 0, None));
    let (mangled, formatted, demangled) = names.unwrap_or(("", "", ""));
    json!({
        "size": if kernel.is_some() { SIZE_HOST_FUNCTION } else { 0 },
        "host_function_id": id,
        "kernel_id": kernel_id,
        "code_object_id": code_object_id,
        "host_function": handle(func),
        // CUDA does not report these: placeholders (0).
        "modules": handle(0),
        "thread_limit": 0,
        "thread_ids": xyz([0; 3]),
        "block_ids": xyz([0; 3]),
        "block_dims": xyz([0; 3]),
        "grid_dims": xyz([0; 3]),
        "workgroup_size": 0,
        "device_function": mangled,
        "formatted_host_function_name": formatted,
        "demangled_host_function_name": demangled,
        "truncated_host_function_name": truncated_name(demangled),
    })
}
