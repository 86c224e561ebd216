//! Workload parameters (`--param K=V`) and the parsers every workload's
//! set-up and check share, so they cannot disagree.

use std::collections::BTreeMap;

use crate::error::WorkloadError;

/// Parameters as given on the command line (`--param k=v`), validated by the
/// workload's declared parameters (`WorkloadInfo::params`).
pub type Params = BTreeMap<String, String>;

/// Parse a parameter as an unsigned integer, naming it when malformed.
pub fn param_u64(params: &Params, name: &str) -> Result<u64, WorkloadError> {
    let v = params
        .get(name)
        .ok_or_else(|| WorkloadError::missing(name))?;
    v.replace('_', "")
        .parse()
        .map_err(|_| WorkloadError::param(name, v, "expected a non-negative integer"))
}

/// Parse a size parameter: a number of bytes with an optional binary
/// suffix `K`/`KiB`, `M`/`MiB`, `G`/`GiB` (any case). Decimal `KB`/`MB`
/// are refused rather than guessed at.
pub fn param_bytes(params: &Params, name: &str) -> Result<u64, WorkloadError> {
    let v = params
        .get(name)
        .ok_or_else(|| WorkloadError::missing(name))?;
    let s = v.trim().replace('_', "");
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = s[digits.len()..].to_ascii_lowercase();
    let mult: u64 = match suffix.as_str() {
        "" | "b" => 1,
        "k" | "ki" | "kib" => 1 << 10,
        "m" | "mi" | "mib" => 1 << 20,
        "g" | "gi" | "gib" => 1 << 30,
        _ => {
            return Err(WorkloadError::param(
                name,
                v,
                "expected bytes, optionally with K/KiB, M/MiB or G/GiB (binary units)",
            ))
        }
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| WorkloadError::param(name, v, "expected a non-negative number of bytes"))?;
    n.checked_mul(mult)
        .ok_or_else(|| WorkloadError::param(name, v, "too large"))
}

/// Parse `corrupt` (test-only switch): 0 or 1.
pub fn param_corrupt(params: &Params) -> Result<bool, WorkloadError> {
    match param_u64(params, "corrupt")? {
        0 => Ok(false),
        1 => Ok(true),
        c => Err(WorkloadError::param("corrupt", c, "expected 0 or 1")),
    }
}
