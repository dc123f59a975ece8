#!/usr/bin/env python3
"""Probe, on any machine with the CUPTI wheel (no GPU): the raw counters a metric is evaluated
from, as NVIDIA's metrics evaluator (libnvperf_host) says for a chip, and which plain counter
metrics read each of them. Raw counters have no names, only ids; a counter metric whose only
raw dependency is that id names it.

E.g. (2026-12-02, GH100): `lts__t_sector_hit_rate.pct` reads the raw counters of
`lts__t_sectors_lookup_hit.sum` and `lts__t_sectors.sum` (not `lts__t_sectors_lookup_miss.sum`).

Usage: python3 bench/probes/raw_dependencies.py LIBNVPERF_HOST CHIP METRIC... [-- CANDIDATE...]
  e.g. python3 bench/probes/raw_dependencies.py .deps/cupti/nvidia/cu13/lib/libnvperf_host.so GH100 \\
       lts__t_sector_hit_rate.pct -- $(kreplay avail list --chip GH100 | grep '^lts__t_sectors.*\\.sum$')"""
import ctypes as C
import sys


class InitializeHost(C.Structure):
    _fields_ = [("structSize", C.c_size_t), ("pPriv", C.c_void_p)]


class ScratchSize(C.Structure):
    _fields_ = [("structSize", C.c_size_t), ("pPriv", C.c_void_p), ("pChipName", C.c_char_p),
                ("pCounterAvailabilityImage", C.c_void_p), ("scratchBufferSize", C.c_size_t)]


class EvaluatorInit(C.Structure):
    _fields_ = [("structSize", C.c_size_t), ("pPriv", C.c_void_p), ("pScratchBuffer", C.c_void_p),
                ("scratchBufferSize", C.c_size_t), ("pChipName", C.c_char_p),
                ("pCounterAvailabilityImage", C.c_void_p), ("pCounterDataImage", C.c_void_p),
                ("counterDataImageSize", C.c_size_t), ("pMetricsEvaluator", C.c_void_p)]


class Request(C.Structure):
    _fields_ = [("metricIndex", C.c_size_t), ("metricType", C.c_uint8), ("rollupOp", C.c_uint8),
                ("submetric", C.c_uint16)]


class ToRequest(C.Structure):
    _fields_ = [("structSize", C.c_size_t), ("pPriv", C.c_void_p), ("pMetricsEvaluator", C.c_void_p),
                ("pMetricName", C.c_char_p), ("pMetricEvalRequest", C.POINTER(Request)),
                ("metricEvalRequestStructSize", C.c_size_t)]


class RawDependencies(C.Structure):
    _fields_ = [("structSize", C.c_size_t), ("pPriv", C.c_void_p), ("pMetricsEvaluator", C.c_void_p),
                ("pMetricEvalRequests", C.POINTER(Request)), ("numMetricEvalRequests", C.c_size_t),
                ("metricEvalRequestStructSize", C.c_size_t), ("metricEvalRequestStrideSize", C.c_size_t),
                ("ppRawDependencies", C.POINTER(C.c_char_p)), ("numRawDependencies", C.c_size_t),
                ("ppOptionalRawDependencies", C.POINTER(C.c_char_p)), ("numOptionalRawDependencies", C.c_size_t)]


def evaluator(lib, chip):
    def check(what, status):
        if status != 0:
            sys.exit(f"{what} failed: NVPA status {status}")
    check("NVPW_InitializeHost", lib.NVPW_InitializeHost(C.byref(InitializeHost(C.sizeof(InitializeHost), None))))
    size = ScratchSize(C.sizeof(ScratchSize), None, chip.encode(), None, 0)
    check("NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize",
          lib.NVPW_CUDA_MetricsEvaluator_CalculateScratchBufferSize(C.byref(size)))
    scratch = (C.c_uint8 * size.scratchBufferSize)()
    init = EvaluatorInit(C.sizeof(EvaluatorInit), None, C.cast(scratch, C.c_void_p), size.scratchBufferSize,
                         chip.encode(), None, None, 0, None)
    check("NVPW_CUDA_MetricsEvaluator_Initialize", lib.NVPW_CUDA_MetricsEvaluator_Initialize(C.byref(init)))
    return init.pMetricsEvaluator, scratch


def raw_dependencies(lib, handle, metric):
    """(required, optional) raw counter ids of `metric`, or None when the evaluator does not know it."""
    request = Request()
    to = ToRequest(C.sizeof(ToRequest), None, handle, metric.encode(), C.pointer(request), C.sizeof(Request))
    if lib.NVPW_MetricsEvaluator_ConvertMetricNameToMetricEvalRequest(C.byref(to)) != 0:
        return None
    deps = RawDependencies(C.sizeof(RawDependencies), None, handle, C.pointer(request), 1, C.sizeof(Request),
                           C.sizeof(Request), None, 0, None, 0)
    if lib.NVPW_MetricsEvaluator_GetMetricRawDependencies(C.byref(deps)) != 0:
        return None
    required = (C.c_char_p * max(deps.numRawDependencies, 1))()
    optional = (C.c_char_p * max(deps.numOptionalRawDependencies, 1))()
    deps.ppRawDependencies = C.cast(required, C.POINTER(C.c_char_p))
    deps.ppOptionalRawDependencies = C.cast(optional, C.POINTER(C.c_char_p))
    if lib.NVPW_MetricsEvaluator_GetMetricRawDependencies(C.byref(deps)) != 0:
        return None
    return ([required[i].decode() for i in range(deps.numRawDependencies)],
            [optional[i].decode() for i in range(deps.numOptionalRawDependencies)])


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    lib = C.CDLL(sys.argv[1])
    handle, _scratch = evaluator(lib, sys.argv[2])
    rest = sys.argv[3:]
    metrics, candidates = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    names = {}
    for candidate in candidates:
        deps = raw_dependencies(lib, handle, candidate)
        if deps and len(deps[0]) == 1 and not deps[1]:
            names.setdefault(deps[0][0], []).append(candidate)
    for metric in metrics:
        deps = raw_dependencies(lib, handle, metric)
        if deps is None:
            print(f"{metric}: unknown to the evaluator")
            continue
        show = lambda ids: ", ".join(f"{i} ({' or '.join(names[i])})" if i in names else i for i in ids) or "-"
        print(f"{metric}: reads {show(deps[0])}; optional {show(deps[1])}")


main()
