//! Numbers for people: significant digits, SI prefixes, times in s/ms/µs.
//! Shared by the terminal tables, the study verdicts and the report.

/// A number with 4 significant digits and an SI prefix (`1.235 M`), or a
/// time in s/ms/µs.
pub fn format_value(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return "-".to_string();
    }
    let sig = |x: f64| {
        let digits = if x.abs() >= 100.0 {
            1
        } else if x.abs() >= 10.0 {
            2
        } else {
            3
        };
        format!("{x:.digits$}")
    };
    if unit == "s" {
        return match v.abs() {
            a if a >= 1.0 => format!("{} s", sig(v)),
            a if a >= 1e-3 => format!("{} ms", sig(v * 1e3)),
            _ => format!("{} µs", sig(v * 1e6)),
        };
    }
    let (div, p) = match v.abs() {
        a if a >= 1e9 => (1e9, " G"),
        a if a >= 1e6 => (1e6, " M"),
        a if a >= 1e3 => (1e3, " k"),
        _ => (1.0, " "),
    };
    format!("{}{p}{unit}", sig(v / div)).trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::format_value;

    #[test]
    fn four_significant_digits_with_prefixes() {
        assert_eq!(format_value(1_234_567.0, "tx/s"), "1.235 Mtx/s");
        assert_eq!(format_value(0.2376, "s"), "237.6 ms");
        assert_eq!(format_value(12.5, "GB/s"), "12.50 GB/s");
        assert_eq!(format_value(3.2e-6, "s"), "3.200 µs");
        assert_eq!(format_value(f64::NAN, "s"), "-");
    }
}
