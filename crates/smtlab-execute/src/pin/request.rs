//! What to run pinned and how: the request, the likwid-style skip mask,
//! and the CPU the C library gives each created thread, modelled in Rust
//! for planning and tests. Uses only the constants of `pin`.

use std::ffi::OsString;

use serde::Serialize;

use super::interface::SKIP_BITS;

/// A skip mask that is not one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SkipMaskError {
    #[error("`{0}` is not a hexadecimal mask; expected e.g. 0x1")]
    NotHex(String),
    #[error("`{0}` has more than {SKIP_BITS} bits; only the first {SKIP_BITS} created threads can be skipped")]
    TooWide(String),
}

/// Parse a likwid-style skip mask: hexadecimal, with or without `0x`.
pub fn parse_skip_mask(text: &str) -> Result<u64, SkipMaskError> {
    let t = text.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(SkipMaskError::NotHex(t.to_string()));
    }
    let significant = digits.trim_start_matches('0');
    if significant.len() > 16 {
        return Err(SkipMaskError::TooWide(t.to_string()));
    }
    Ok(u64::from_str_radix(
        if significant.is_empty() {
            "0"
        } else {
            significant
        },
        16,
    )
    .expect("checked hex digits"))
}

/// What the library does with created thread number `index` (from 0): the
/// CPU it is pinned to, or `None` if the skip mask leaves it on the whole
/// list. A model of the C code, for planning and tests.
pub fn planned_cpu(cpus: &[u32], skip: u64, index: usize) -> Option<u32> {
    let skipped = |i: usize| i < SKIP_BITS as usize && (skip >> i) & 1 == 1;
    if cpus.is_empty() || skipped(index) {
        return None;
    }
    let k = (0..index).filter(|&i| !skipped(i)).count();
    Some(cpus[(k + 1) % cpus.len()])
}

/// Thread by thread (the library), or the whole process to the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PinMode {
    Threads,
    Process,
}

/// A program to run pinned.
#[derive(Debug, Clone)]
pub struct PinRequest {
    /// Program and arguments; must not be empty.
    pub command: Vec<OsString>,
    /// CPUs in pinning order; must not be empty.
    pub cpus: Vec<u32>,
    pub skip: u64,
    pub mode: PinMode,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_masks() {
        assert_eq!(parse_skip_mask("0x1"), Ok(1));
        assert_eq!(parse_skip_mask("0XfF"), Ok(255));
        assert_eq!(parse_skip_mask("3"), Ok(3));
        assert_eq!(parse_skip_mask("0x0000000000000000001"), Ok(1));
        assert_eq!(parse_skip_mask("0xffffffffffffffff"), Ok(u64::MAX));
        assert!(matches!(
            parse_skip_mask("0x1ffffffffffffffff"),
            Err(SkipMaskError::TooWide(_))
        ));
        assert!(matches!(
            parse_skip_mask("0x"),
            Err(SkipMaskError::NotHex(_))
        ));
        assert!(matches!(
            parse_skip_mask("zz"),
            Err(SkipMaskError::NotHex(_))
        ));
    }

    #[test]
    fn planned_cpus_round_robin_after_main_with_skips() {
        let cpus = [4, 5, 6];
        let plan: Vec<_> = (0..5).map(|i| planned_cpu(&cpus, 0, i)).collect();
        assert_eq!(plan, [Some(5), Some(6), Some(4), Some(5), Some(6)]);
        // Skipped threads do not use up a CPU.
        let plan: Vec<_> = (0..4).map(|i| planned_cpu(&cpus, 0b101, i)).collect();
        assert_eq!(plan, [None, Some(5), None, Some(6)]);
    }
}
