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
use crate::error::FormatError;
use crate::naming::truncated_name;
use crate::run::ProcessRun;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

/// `sizeof(rocprofiler_callback_tracing_code_object_host_kernel_symbol_register_data_t)` on
/// x86-64: six 64-bit fields, a name pointer, a 32-bit limit, four dim3s, a 64-bit size.
const SIZE_HOST_FUNCTION: u64 = 120;

/// The process's host functions: (host stub address, our kernel id), in id order (from 1).
pub(super) struct HostFunctions(Vec<(u64, u64)>);

/// Whether `function` is the runtime's kernel launch (per-thread-stream form or not).
fn is_runtime_launch(function: &str) -> bool {
    function == "cudaLaunchKernel" || function.starts_with("cudaLaunchKernel_")
}

/// The runtime launch calls' `func` arguments by correlation id, gathered as the document
/// writes the runtime calls (`hip_api`, before `host_functions`): the arguments are read once.
#[derive(Default)]
pub(super) struct Launches(RefCell<HashMap<u64, u64>>);

impl Launches {
    /// Notes `call` if it is a runtime launch with its `func` argument.
    pub(super) fn see(&self, call: &ApiRecord) {
        if call.domain == ApiDomain::Runtime && is_runtime_launch(&call.function) {
            if let Some(func) = call.args.number("func") {
                self.0.borrow_mut().insert(call.correlation_id, func);
            }
        }
    }
}

impl HostFunctions {
    /// One pass over the process's dispatches, when it recorded launch calls with their
    /// arguments (`launches`, none otherwise).
    pub(super) fn scan(run: &ProcessRun, launches: Launches) -> Result<HostFunctions, FormatError> {
        let launches = launches.0.into_inner();
        let mut found = Vec::new();
        if launches.is_empty() {
            return Ok(HostFunctions(found));
        }
        let mut seen = HashSet::new();
        for dispatch in run.each_dispatch() {
            let dispatch = dispatch?;
            if let Some(func) = launches.get(&dispatch.correlation_id) {
                if seen.insert(*func) {
                    found.push((*func, dispatch.kernel_id));
                }
            }
        }
        Ok(HostFunctions(found))
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
