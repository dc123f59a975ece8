//! The arguments of a traced API call, as rocprofv3 records a HIP call's (rocprofiler-sdk's
//! `rocprofiler_iterate_buffer_tracing_record_args`: each argument's position in the signature,
//! C type, name and value as text), which rocpd keeps in `rocpd_arg` (its `region_args` view)
//! and the JSON in a runtime record's `args`.
//!
//! kreplay decodes the arguments of the calls where that is cheap — launches, copies, memsets,
//! allocations and frees, synchronisations — and only those it names: their declarations are
//! the CUDA headers' (`cuda_runtime_api.h`, `cuda.h`), listed here once for both devices
//! ([`declarations`]). On the application's thread a call's arguments are a [`RecordedArgs`]:
//! the function's static declarations and the values held inline, so that nothing is allocated
//! per call; the writer thread turns them into text. Read back from a database they are
//! [`ApiArgs::Read`].

use serde::{Deserialize, Serialize};
use std::fmt;

/// The most arguments a call keeps.
pub const MAX_ARGS: usize = 9;

/// One declared argument: its position in the function's signature (from 0), C type and name,
/// as CUDA's headers declare them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgDecl {
    pub position: u32,
    pub ty: &'static str,
    pub name: &'static str,
}

const fn arg(position: u32, ty: &'static str, name: &'static str) -> ArgDecl {
    ArgDecl { position, ty, name }
}

/// How a raw value of C type `ty` reads, as rocprofiler-sdk writes arguments: a `dim3` as
/// `{z=1, y=1, x=256}`, a `cudaMemcpyKind` by its enumerator, an `int` signed, a pointer or
/// handle as `0x…` (`0` for NULL, as C++ streams write a null pointer), other integers in
/// decimal.
#[derive(Debug, Clone, Copy)]
pub struct ArgText<'a> {
    pub ty: &'a str,
    pub raw: u64,
}

impl fmt::Display for ArgText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let raw = self.raw;
        match self.ty {
            "dim3" => {
                let [x, y, z] = undim3(raw);
                write!(f, "{{z={z}, y={y}, x={x}}}")
            }
            "cudaMemcpyKind" => f.write_str(memcpy_kind_name(raw as u32)),
            "int" => write!(f, "{}", raw as i64),
            ty if is_pointer(ty) => match raw {
                0 => f.write_str("0"),
                _ => write!(f, "{raw:#x}"),
            },
            _ => write!(f, "{raw}"),
        }
    }
}

/// Whether values of C type `ty` are addresses or handles.
fn is_pointer(ty: &str) -> bool {
    ty.ends_with('*')
        || ty.ends_with("_t") && ty != "size_t"
        || matches!(
            ty,
            "CUstream" | "CUdeviceptr" | "CUfunction" | "CUevent" | "CUgraphExec"
        )
}

/// A `dim3` as one raw value (x in the low 32 bits, y and z 16 bits each above: CUDA's limits
/// on a grid's and a block's y and z, 65535 and 64, fit).
pub const fn dim3(v: [u32; 3]) -> u64 {
    v[0] as u64 | (v[1] as u64 & 0xffff) << 32 | (v[2] as u64 & 0xffff) << 48
}

fn undim3(raw: u64) -> [u32; 3] {
    [raw as u32, (raw >> 32) as u32 & 0xffff, (raw >> 48) as u32]
}

/// `cudaMemcpyKind`'s enumerator of `value`.
pub fn memcpy_kind_name(value: u32) -> &'static str {
    match value {
        0 => "cudaMemcpyHostToHost",
        1 => "cudaMemcpyHostToDevice",
        2 => "cudaMemcpyDeviceToHost",
        3 => "cudaMemcpyDeviceToDevice",
        4 => "cudaMemcpyDefault",
        _ => "Unknown",
    }
}

/// A call's arguments as recorded: its function's declarations and their raw values, inline
/// (an output argument: what it received).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedArgs {
    decls: &'static [ArgDecl],
    values: [u64; MAX_ARGS],
}

impl RecordedArgs {
    /// `values` in the order of `decls` (extra values, or declarations without one, are left
    /// out).
    pub fn new(decls: &'static [ArgDecl], values: &[u64]) -> RecordedArgs {
        let len = decls.len().min(values.len()).min(MAX_ARGS);
        let mut held = [0; MAX_ARGS];
        held[..len].copy_from_slice(&values[..len]);
        RecordedArgs {
            decls: &decls[..len],
            values: held,
        }
    }

    /// `values` as the arguments of the function `name` ([`declarations`]); `None` when its
    /// arguments are not recorded or no value was given.
    pub fn of(name: &str, values: &[u64]) -> Option<RecordedArgs> {
        let args = RecordedArgs::new(declarations(name)?, values);
        (!args.decls.is_empty()).then_some(args)
    }

    /// Each declaration with its value as text.
    pub fn iter(&self) -> impl Iterator<Item = (&'static ArgDecl, ArgText<'static>)> + '_ {
        self.decls.iter().zip(self.values).map(|(decl, raw)| {
            let text = ArgText { ty: decl.ty, raw };
            (decl, text)
        })
    }
}

/// One argument as the outputs write it (rocpd's `rocpd_arg`; the JSON's `args` entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiArg {
    pub position: u32,
    #[serde(rename = "type")]
    pub ty: String,
    pub name: String,
    pub value: String,
}

/// A call's arguments: none, as recorded, or as read back (by position).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(from = "Vec<ApiArg>", into = "Vec<ApiArg>")]
pub enum ApiArgs {
    #[default]
    None,
    Recorded(RecordedArgs),
    Read(Vec<ApiArg>),
}

impl ApiArgs {
    pub fn is_empty(&self) -> bool {
        match self {
            ApiArgs::None => true,
            ApiArgs::Recorded(args) => args.decls.is_empty(),
            ApiArgs::Read(args) => args.is_empty(),
        }
    }

    /// The value of the argument `name` as a number (an address, a handle, a non-negative
    /// integer); `None` when the call has no such argument or its text is not a number.
    pub fn number(&self, name: &str) -> Option<u64> {
        match self {
            ApiArgs::None => None,
            // As read back: what is written as a number (not a dim3 nor an enumerator).
            ApiArgs::Recorded(args) => args
                .iter()
                .find(|(decl, _)| decl.name == name)
                .filter(|(decl, _)| !matches!(decl.ty, "dim3" | "cudaMemcpyKind"))
                .map(|(_, text)| text.raw),
            ApiArgs::Read(args) => {
                let text = &args.iter().find(|a| a.name == name)?.value;
                match text.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16).ok(),
                    None => text.parse().ok(),
                }
            }
        }
    }

    /// Every argument as text, by position.
    pub fn to_vec(&self) -> Vec<ApiArg> {
        match self {
            ApiArgs::None => Vec::new(),
            ApiArgs::Recorded(args) => args
                .iter()
                .map(|(decl, value)| ApiArg {
                    position: decl.position,
                    ty: decl.ty.to_string(),
                    name: decl.name.to_string(),
                    value: value.to_string(),
                })
                .collect(),
            ApiArgs::Read(args) => args.clone(),
        }
    }
}

impl From<Vec<ApiArg>> for ApiArgs {
    fn from(args: Vec<ApiArg>) -> ApiArgs {
        if args.is_empty() {
            ApiArgs::None
        } else {
            ApiArgs::Read(args)
        }
    }
}

impl From<ApiArgs> for Vec<ApiArg> {
    fn from(args: ApiArgs) -> Vec<ApiArg> {
        args.to_vec()
    }
}

/// The declarations of the arguments kreplay records for the CUDA function `name` (its
/// per-thread suffix `_ptsz`/`_ptds` and CUPTI's version suffix `_v3020`-style dropped first
/// by the caller where it has one); `None` for a function whose arguments are not recorded.
/// Runtime functions as `cuda_runtime_api.h` declares them, driver functions as `cuda.h`.
pub fn declarations(name: &str) -> Option<&'static [ArgDecl]> {
    const PTR: &str = "void*";
    const CPTR: &str = "const void*";
    const SIZE: &str = "size_t";
    const UINT: &str = "unsigned int";
    const STREAM: &str = "cudaStream_t";
    const CUSTREAM: &str = "CUstream";
    const DPTR: &str = "CUdeviceptr";
    let decls: &'static [ArgDecl] = match name {
        // Runtime API.
        "cudaLaunchKernel" => {
            const {
                &[
                    arg(0, CPTR, "func"),
                    arg(1, "dim3", "gridDim"),
                    arg(2, "dim3", "blockDim"),
                    arg(4, SIZE, "sharedMem"),
                    arg(5, STREAM, "stream"),
                ]
            }
        }
        // `cudaLaunchKernelExC(config, func, args)`: its configuration is recorded field by
        // field, as `cudaLaunchKernel`'s arguments are.
        "cudaLaunchKernelExC" => {
            const {
                &[
                    arg(0, CPTR, "func"),
                    arg(1, "dim3", "gridDim"),
                    arg(2, "dim3", "blockDim"),
                    arg(3, SIZE, "dynamicSmemBytes"),
                    arg(4, STREAM, "stream"),
                ]
            }
        }
        "cudaMemcpy" => {
            const {
                &[
                    arg(0, PTR, "dst"),
                    arg(1, CPTR, "src"),
                    arg(2, SIZE, "count"),
                    arg(3, "cudaMemcpyKind", "kind"),
                ]
            }
        }
        "cudaMemcpyAsync" => {
            const {
                &[
                    arg(0, PTR, "dst"),
                    arg(1, CPTR, "src"),
                    arg(2, SIZE, "count"),
                    arg(3, "cudaMemcpyKind", "kind"),
                    arg(4, STREAM, "stream"),
                ]
            }
        }
        "cudaMemcpyPeer" => {
            const {
                &[
                    arg(0, PTR, "dst"),
                    arg(1, "int", "dstDevice"),
                    arg(2, CPTR, "src"),
                    arg(3, "int", "srcDevice"),
                    arg(4, SIZE, "count"),
                ]
            }
        }
        "cudaMemset" => {
            const {
                &[
                    arg(0, PTR, "devPtr"),
                    arg(1, "int", "value"),
                    arg(2, SIZE, "count"),
                ]
            }
        }
        "cudaMemsetAsync" => {
            const {
                &[
                    arg(0, PTR, "devPtr"),
                    arg(1, "int", "value"),
                    arg(2, SIZE, "count"),
                    arg(3, STREAM, "stream"),
                ]
            }
        }
        "cudaMalloc" | "cudaMallocManaged" => {
            const { &[arg(0, "void**", "devPtr"), arg(1, SIZE, "size")] }
        }
        "cudaMallocHost" => const { &[arg(0, "void**", "ptr"), arg(1, SIZE, "size")] },
        "cudaHostAlloc" => const { &[arg(0, "void**", "pHost"), arg(1, SIZE, "size")] },
        "cudaMallocPitch" => {
            const {
                &[
                    arg(0, "void**", "devPtr"),
                    arg(2, SIZE, "width"),
                    arg(3, SIZE, "height"),
                ]
            }
        }
        "cudaMallocAsync" => {
            const {
                &[
                    arg(0, "void**", "devPtr"),
                    arg(1, SIZE, "size"),
                    arg(2, STREAM, "hStream"),
                ]
            }
        }
        "cudaFree" => const { &[arg(0, PTR, "devPtr")] },
        "cudaFreeHost" => const { &[arg(0, PTR, "ptr")] },
        "cudaFreeAsync" => const { &[arg(0, PTR, "devPtr"), arg(1, STREAM, "hStream")] },
        "cudaStreamSynchronize" => const { &[arg(0, STREAM, "stream")] },
        "cudaEventSynchronize" => const { &[arg(0, "cudaEvent_t", "event")] },
        "cudaGraphLaunch" => {
            const {
                &[
                    arg(0, "cudaGraphExec_t", "graphExec"),
                    arg(1, STREAM, "stream"),
                ]
            }
        }
        // Driver API.
        "cuLaunchKernel" => {
            const {
                &[
                    arg(0, "CUfunction", "f"),
                    arg(1, UINT, "gridDimX"),
                    arg(2, UINT, "gridDimY"),
                    arg(3, UINT, "gridDimZ"),
                    arg(4, UINT, "blockDimX"),
                    arg(5, UINT, "blockDimY"),
                    arg(6, UINT, "blockDimZ"),
                    arg(7, UINT, "sharedMemBytes"),
                    arg(8, CUSTREAM, "hStream"),
                ]
            }
        }
        "cuMemcpyHtoD_v2" => {
            const {
                &[
                    arg(0, DPTR, "dstDevice"),
                    arg(1, CPTR, "srcHost"),
                    arg(2, SIZE, "ByteCount"),
                ]
            }
        }
        "cuMemcpyHtoDAsync_v2" => {
            const {
                &[
                    arg(0, DPTR, "dstDevice"),
                    arg(1, CPTR, "srcHost"),
                    arg(2, SIZE, "ByteCount"),
                    arg(3, CUSTREAM, "hStream"),
                ]
            }
        }
        "cuMemcpyDtoH_v2" => {
            const {
                &[
                    arg(0, PTR, "dstHost"),
                    arg(1, DPTR, "srcDevice"),
                    arg(2, SIZE, "ByteCount"),
                ]
            }
        }
        "cuMemcpyDtoHAsync_v2" => {
            const {
                &[
                    arg(0, PTR, "dstHost"),
                    arg(1, DPTR, "srcDevice"),
                    arg(2, SIZE, "ByteCount"),
                    arg(3, CUSTREAM, "hStream"),
                ]
            }
        }
        "cuMemcpyDtoD_v2" => {
            const {
                &[
                    arg(0, DPTR, "dstDevice"),
                    arg(1, DPTR, "srcDevice"),
                    arg(2, SIZE, "ByteCount"),
                ]
            }
        }
        "cuMemcpyDtoDAsync_v2" => {
            const {
                &[
                    arg(0, DPTR, "dstDevice"),
                    arg(1, DPTR, "srcDevice"),
                    arg(2, SIZE, "ByteCount"),
                    arg(3, CUSTREAM, "hStream"),
                ]
            }
        }
        "cuMemcpy" => {
            const {
                &[
                    arg(0, DPTR, "dst"),
                    arg(1, DPTR, "src"),
                    arg(2, SIZE, "ByteCount"),
                ]
            }
        }
        "cuMemcpyAsync" => {
            const {
                &[
                    arg(0, DPTR, "dst"),
                    arg(1, DPTR, "src"),
                    arg(2, SIZE, "ByteCount"),
                    arg(3, CUSTREAM, "hStream"),
                ]
            }
        }
        "cuMemcpyPeer" => {
            const {
                &[
                    arg(0, DPTR, "dstDevice"),
                    arg(2, DPTR, "srcDevice"),
                    arg(4, SIZE, "ByteCount"),
                ]
            }
        }
        "cuMemsetD32_v2" => {
            const {
                &[
                    arg(0, DPTR, "dstDevice"),
                    arg(1, UINT, "ui"),
                    arg(2, SIZE, "N"),
                ]
            }
        }
        "cuMemsetD32Async" => {
            const {
                &[
                    arg(0, DPTR, "dstDevice"),
                    arg(1, UINT, "ui"),
                    arg(2, SIZE, "N"),
                    arg(3, CUSTREAM, "hStream"),
                ]
            }
        }
        "cuMemsetD8_v2" => {
            const {
                &[
                    arg(0, DPTR, "dstDevice"),
                    arg(1, "unsigned char", "uc"),
                    arg(2, SIZE, "N"),
                ]
            }
        }
        "cuMemsetD8Async" => {
            const {
                &[
                    arg(0, DPTR, "dstDevice"),
                    arg(1, "unsigned char", "uc"),
                    arg(2, SIZE, "N"),
                    arg(3, CUSTREAM, "hStream"),
                ]
            }
        }
        "cuMemAlloc_v2" => const { &[arg(0, "CUdeviceptr*", "dptr"), arg(1, SIZE, "bytesize")] },
        "cuMemAllocManaged" => {
            const { &[arg(0, "CUdeviceptr*", "dptr"), arg(1, SIZE, "bytesize")] }
        }
        "cuMemAllocPitch_v2" => {
            const {
                &[
                    arg(0, "CUdeviceptr*", "dptr"),
                    arg(2, SIZE, "WidthInBytes"),
                    arg(3, SIZE, "Height"),
                ]
            }
        }
        "cuMemAllocAsync" => {
            const {
                &[
                    arg(0, "CUdeviceptr*", "dptr"),
                    arg(1, SIZE, "bytesize"),
                    arg(2, CUSTREAM, "hStream"),
                ]
            }
        }
        "cuMemHostAlloc" => const { &[arg(0, "void**", "pp"), arg(1, SIZE, "bytesize")] },
        "cuMemAllocHost_v2" => const { &[arg(0, "void**", "pp"), arg(1, SIZE, "bytesize")] },
        "cuMemFree_v2" => const { &[arg(0, DPTR, "dptr")] },
        "cuMemFreeHost" => const { &[arg(0, PTR, "p")] },
        "cuMemFreeAsync" => const { &[arg(0, DPTR, "dptr"), arg(1, CUSTREAM, "hStream")] },
        "cuMemMap" => {
            const {
                &[
                    arg(0, DPTR, "ptr"),
                    arg(1, SIZE, "size"),
                    arg(2, SIZE, "offset"),
                ]
            }
        }
        "cuMemUnmap" => const { &[arg(0, DPTR, "ptr"), arg(1, SIZE, "size")] },
        "cuStreamSynchronize" => const { &[arg(0, CUSTREAM, "hStream")] },
        "cuEventSynchronize" => const { &[arg(0, "CUevent", "hEvent")] },
        "cuGraphLaunch" => {
            const {
                &[
                    arg(0, "CUgraphExec", "hGraphExec"),
                    arg(1, CUSTREAM, "hStream"),
                ]
            }
        }
        _ => return None,
    };
    Some(decls)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(ty: &str, raw: u64) -> String {
        ArgText { ty, raw }.to_string()
    }

    #[test]
    fn values_read_as_rocprofiler_sdk_writes_them() {
        assert_eq!(text("dim3", dim3([256, 2, 1])), "{z=1, y=2, x=256}");
        assert_eq!(
            text("dim3", dim3([u32::MAX >> 1, 65535, 64])),
            "{z=64, y=65535, x=2147483647}"
        );
        assert_eq!(text("void*", 0), "0");
        assert_eq!(text("cudaStream_t", 0x7f00), "0x7f00");
        assert_eq!(text("CUdeviceptr", 0x10), "0x10");
        assert_eq!(text("int", -1i64 as u64), "-1");
        assert_eq!(text("size_t", 4096), "4096");
        assert_eq!(text("unsigned int", 7), "7");
        assert_eq!(text("cudaMemcpyKind", 1), "cudaMemcpyHostToDevice");
    }

    #[test]
    fn recorded_args_pair_each_value_with_its_declaration_and_survive_serde() {
        let decls = declarations("cudaMemcpy").unwrap();
        let recorded = RecordedArgs::new(decls, &[0x10, 0x20, 64, 2]);
        let args = ApiArgs::Recorded(recorded).to_vec();
        let named: Vec<(u32, &str, &str, &str)> = args
            .iter()
            .map(|a| (a.position, a.ty.as_str(), a.name.as_str(), a.value.as_str()))
            .collect();
        assert_eq!(
            named,
            [
                (0, "void*", "dst", "0x10"),
                (1, "const void*", "src", "0x20"),
                (2, "size_t", "count", "64"),
                (3, "cudaMemcpyKind", "kind", "cudaMemcpyDeviceToHost"),
            ]
        );
        let text = serde_json::to_string(&ApiArgs::Recorded(recorded)).unwrap();
        assert_eq!(
            serde_json::from_str::<ApiArgs>(&text).unwrap(),
            ApiArgs::Read(args)
        );
        // Fewer values than declarations: only those with a value.
        let short = RecordedArgs::new(decls, &[1]);
        assert_eq!(ApiArgs::Recorded(short).to_vec().len(), 1);
        assert!(RecordedArgs::of("cudaMemcpy", &[]).is_none());
        assert!(RecordedArgs::of("cudaFree", &[1]).is_some());
        assert!(ApiArgs::None.is_empty());
        assert!(declarations("cuCtxSynchronize").is_none());
        // A number read back from its text, as recorded.
        let read = ApiArgs::Read(ApiArgs::Recorded(recorded).to_vec());
        for args in [ApiArgs::Recorded(recorded), read] {
            assert_eq!(args.number("src"), Some(0x20));
            assert_eq!(args.number("count"), Some(64));
            assert_eq!(args.number("kind"), None);
            assert_eq!(args.number("stream"), None);
        }
    }

    #[test]
    fn a_record_of_arguments_stays_small() {
        // Held inline in every API record on the application thread.
        assert!(std::mem::size_of::<ApiArgs>() <= 96);
    }
}
