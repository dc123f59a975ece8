//! Names every output gives the same way: a metric's block, a device's vendor, a kernel's
//! truncated name.

use crate::records::KernelSymbol;

/// The block of a metric as CUPTI names it (`sm__warps_launched.sum` is in block `sm`).
pub(crate) fn metric_block(metric: &str) -> &str {
    metric.split("__").next().unwrap_or(metric)
}

/// The vendor every output names for a device: NVIDIA's, or the reference software device's
/// (chip `SIM`).
pub(crate) fn vendor_for_chip(chip: &str) -> &'static str {
    if chip == "SIM" {
        "kreplay software device"
    } else {
        "NVIDIA"
    }
}

/// rocprofv3's `formatted_kernel_name`: the name every output but the Perfetto trace gives a
/// kernel under the kernel naming options, mangled (`-M/--mangled-kernels`, which wins),
/// truncated (`-T/--truncate-kernels`) or demangled.
pub(crate) fn formatted_name(mangled: bool, truncate: bool, symbol: &KernelSymbol) -> &str {
    if mangled {
        &symbol.mangled_name
    } else if truncate {
        truncated_name(&symbol.demangled_name)
    } else {
        &symbol.demangled_name
    }
}

/// rocprofv3's truncated kernel name (`-T/--truncate-kernels`, `truncated_kernel_name`): the
/// function's own name, without its return type, scope, template arguments and parameters
/// (`void ns::Foo<int>::scale<float>(float*, int)` is `scale`). Trailing balanced groups
/// (`(...)`, `<...>`, `[...]`, `{...}`) and spaces are dropped from the end, then the name runs
/// back to the last space or `:`.
pub(crate) fn truncated_name(demangled: &str) -> &str {
    let bytes = demangled.as_bytes();
    let mut end = bytes.len();
    // Drop trailing groups and spaces.
    loop {
        while end > 0 && bytes[end - 1] == b' ' {
            end -= 1;
        }
        let Some(open) = end.checked_sub(1).and_then(|last| match bytes[last] {
            b')' => Some(b'('),
            b'>' => Some(b'<'),
            b']' => Some(b'['),
            b'}' => Some(b'{'),
            _ => None,
        }) else {
            break;
        };
        let close = bytes[end - 1];
        let mut depth = 0usize;
        let mut i = end;
        while i > 0 {
            i -= 1;
            if bytes[i] == close {
                depth += 1;
            } else if bytes[i] == open {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
        }
        if depth != 0 {
            // Unbalanced: leave the name as it is.
            return demangled;
        }
        end = i;
    }
    let start = bytes[..end]
        .iter()
        .rposition(|b| *b == b' ' || *b == b':')
        .map_or(0, |p| p + 1);
    let name = &demangled[start..end];
    if name.is_empty() {
        demangled
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::truncated_name;

    #[test]
    fn truncated_names_are_the_functions_own_as_rocprofv3s() {
        for (demangled, truncated) in [
            ("Foo<int, float>::foo(a[], int (int))", "foo"),
            ("void ns::Foo<int>::scale<float>(float*, int)", "scale"),
            ("scale_add(unsigned int*, unsigned int)", "scale_add"),
            ("scale_add", "scale_add"),
            ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)", "vectorized_elementwise_kernel"),
            ("(anonymous namespace)::k()", "k"),
            ("broken(", "broken("),
            ("", ""),
        ] {
            assert_eq!(truncated_name(demangled), truncated, "{demangled}");
        }
    }
}
