//! Numbers as rocprofv3's C++ prints them (`std::fixed`, `std::scientific`, fmt's `{}`), and
//! CSV string quoting: shared by the counter CSV files and the `--stats`/`--summary` output.

/// `nan`, `inf` or `-inf`, as C++ streams print a value that is not finite.
pub(crate) fn non_finite(value: f64) -> String {
    if value.is_nan() {
        "nan".to_string()
    } else if value > 0.0 {
        "inf".to_string()
    } else {
        "-inf".to_string()
    }
}

/// Rust's `1.5e-5` exponent written C's way: sign always, at least two digits (`1.5e-05`).
fn c_exponent(text: String) -> String {
    match text.split_once('e') {
        Some((mantissa, exponent)) => match exponent.parse::<i32>() {
            Ok(exponent) => format!(
                "{mantissa}e{}{:02}",
                if exponent < 0 { '-' } else { '+' },
                exponent.unsigned_abs()
            ),
            Err(_) => text,
        },
        None => text,
    }
}

/// `value` in scientific notation with `precision` decimals and C's exponent (`1.234e+03`), as
/// `std::scientific` and fmt's `{:.Ne}` print it.
pub(crate) fn scientific(value: f64, precision: usize) -> String {
    if !value.is_finite() {
        return non_finite(value);
    }
    c_exponent(format!("{value:.precision$e}"))
}

/// `value` as fmt's `{}` prints a double: the shortest digits that read back the same, in
/// fixed notation when the decimal exponent is in [-4, 16), else as `1.5e-05`.
pub(crate) fn shortest(value: f64) -> String {
    if !value.is_finite() {
        return non_finite(value);
    }
    if value == 0.0 {
        return format!("{value}");
    }
    let exponential = format!("{value:e}");
    let exponent: i32 = exponential
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    if (-4..16).contains(&exponent) {
        format!("{value}")
    } else {
        c_exponent(exponential)
    }
}

/// A CSV string field: always quoted, inner quotes doubled.
pub(crate) fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// A byte count for people: `512 B`, `3.0 MiB`, `59.4 GiB` (binary units, one decimal).
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scientific_and_shortest_print_as_cpp_does() {
        assert_eq!(scientific(1234.5678, 3), "1.235e+03");
        assert_eq!(scientific(0.0, 3), "0.000e+00");
        assert_eq!(scientific(0.5, 8), "5.00000000e-01");
        assert_eq!(scientific(f64::NAN, 3), "nan");
        assert_eq!(scientific(f64::NEG_INFINITY, 3), "-inf");
        assert_eq!(shortest(1.5e-5), "1.5e-05");
        assert_eq!(shortest(0.0001), "0.0001");
        assert_eq!(shortest(1e15), "1000000000000000");
        assert_eq!(shortest(1e16), "1e+16");
        assert_eq!(shortest(2.0), "2");
        assert_eq!(shortest(0.0), "0");
        assert_eq!(quoted("a\"b"), "\"a\"\"b\"");
    }
}
