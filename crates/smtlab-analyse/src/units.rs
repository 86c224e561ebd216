//! Numbers for people: significant digits, SI prefixes, times in s/ms/µs.
//! Two forms, one per use: [`table_value`] (4 significant digits, for the
//! cells of terminal and report tables) and [`sentence_value`] (3
//! significant digits, for verdict and recommendation sentences).

/// A number with 4 significant digits and an SI prefix (`1.235 M`), or a
/// time in s/ms/µs.
pub fn table_value(v: f64, unit: &str) -> String {
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

/// A value with its unit, to 3 significant digits: a rate whose unit starts
/// with a lower-case word (`tx/s`, `ops/s`) gets an SI prefix (`1.93
/// Mtx/s`); seconds below 1 become ms or µs; other units (`GB/s`, `ns`)
/// are left as they are.
pub fn sentence_value(x: f64, unit: &str) -> String {
    if !x.is_finite() {
        return format!("{x} {unit}");
    }
    let prefixable = unit.ends_with("/s") && unit.starts_with(|c: char| c.is_ascii_lowercase());
    let (v, u) = if prefixable {
        match x.abs() {
            a if a >= 1e12 => (x / 1e12, format!("T{unit}")),
            a if a >= 1e9 => (x / 1e9, format!("G{unit}")),
            a if a >= 1e6 => (x / 1e6, format!("M{unit}")),
            a if a >= 1e3 => (x / 1e3, format!("k{unit}")),
            _ => (x, unit.to_string()),
        }
    } else if unit == "s" && x != 0.0 && x.abs() < 1e-3 {
        (x * 1e6, "µs".to_string())
    } else if unit == "s" && x != 0.0 && x.abs() < 1.0 {
        (x * 1e3, "ms".to_string())
    } else {
        (x, unit.to_string())
    };
    if u.is_empty() {
        sig3(v)
    } else {
        format!("{} {u}", sig3(v))
    }
}

/// `x` to 3 significant digits, without an exponent: `1.93`, `19.3`, `193`,
/// `19300`, `0.0193`.
fn sig3(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = |v: f64| v.abs().log10().floor() as i32;
    let scale = 10f64.powi(2 - digits(x));
    // Rounding may add a digit (9.996 -> 10.0): measure again after it.
    let r = (x * scale).round() / scale;
    let decimals = (2 - digits(r)).max(0) as usize;
    format!("{r:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::{sentence_value, table_value};

    #[test]
    fn four_significant_digits_with_prefixes() {
        assert_eq!(table_value(1_234_567.0, "tx/s"), "1.235 Mtx/s");
        assert_eq!(table_value(0.2376, "s"), "237.6 ms");
        assert_eq!(table_value(12.5, "GB/s"), "12.50 GB/s");
        assert_eq!(table_value(3.2e-6, "s"), "3.200 µs");
        assert_eq!(table_value(f64::NAN, "s"), "-");
    }

    #[test]
    fn values_have_three_significant_digits() {
        assert_eq!(sentence_value(1.93e6, "tx/s"), "1.93 Mtx/s");
        assert_eq!(sentence_value(1_934_567.0, "ops/s"), "1.93 Mops/s");
        assert_eq!(sentence_value(999.6, "ops/s"), "1000 ops/s");
        assert_eq!(sentence_value(12.345, "GB/s"), "12.3 GB/s");
        assert_eq!(sentence_value(85.24, "ns"), "85.2 ns");
        assert_eq!(sentence_value(2.5, "s"), "2.50 s");
        assert_eq!(sentence_value(0.0123, "s"), "12.3 ms");
        assert_eq!(sentence_value(0.0000123, "s"), "12.3 µs");
        assert_eq!(sentence_value(9.996, "s"), "10.0 s");
        assert_eq!(sentence_value(123456.0, "s"), "123000 s");
        assert_eq!(sentence_value(0.0, "ops/s"), "0 ops/s");
        assert_eq!(sentence_value(4.2e9, "rows/s"), "4.20 Grows/s");
        assert_eq!(sentence_value(f64::NAN, "s"), "NaN s");
    }
}
