//! Workload parameters (`--param K=V`): defaults filled in, unknown names
//! and values of the wrong type refused when a run is planned, and the
//! parsers every workload's set-up and check share, so they cannot disagree.

use std::collections::BTreeMap;

use anyhow::bail;

use crate::WorkloadInfo;

/// Parameters as given on the command line (`--param k=v`), validated by the
/// workload's [`Workload::params`] table.
pub type Params = BTreeMap<String, String>;

/// A parameter refused before anything runs; every message starts with
/// `--param` and names the workload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("--param {name}: workload `{workload}` has no parameter `{name}`; valid: {valid}")]
    Unknown {
        name: String,
        workload: &'static str,
        /// The workload's parameters, comma-separated, or `none`.
        valid: String,
    },
    #[error(
        "--param {name}={value}: workload `{workload}` expects a non-negative integer here \
         (default {default})"
    )]
    NotAnInteger {
        name: &'static str,
        value: String,
        workload: &'static str,
        default: &'static str,
    },
    #[error(
        "--param {name}={value}: workload `{workload}` expects a size in bytes with an optional \
         K/M/G suffix here (default {default})"
    )]
    NotASize {
        name: &'static str,
        value: String,
        workload: &'static str,
        default: &'static str,
    },
}

/// Refuse a given value that does not have the type of its default (an
/// integer, or a size like 384MiB), so a typo is refused when the run is
/// planned instead of failing every sample. Ranges are each workload's
/// own: [`Workload::check`].
pub fn check_param_types(info: &WorkloadInfo, given: &Params) -> Result<(), ParamError> {
    for p in &info.params {
        let Some(v) = given.get(p.name) else { continue };
        let one = |val: &str| Params::from([(p.name.to_string(), val.to_string())]);
        if param_u64(&one(p.default), p.name).is_ok() {
            param_u64(&one(v), p.name).map_err(|_| ParamError::NotAnInteger {
                name: p.name,
                value: v.clone(),
                workload: info.name,
                default: p.default,
            })?;
        } else if param_bytes(&one(p.default), p.name).is_ok() {
            param_bytes(&one(v), p.name).map_err(|_| ParamError::NotASize {
                name: p.name,
                value: v.clone(),
                workload: info.name,
                default: p.default,
            })?;
        }
    }
    Ok(())
}

/// Fill in defaults and refuse unknown parameters, naming them.
pub fn resolve_params(info: &WorkloadInfo, given: &Params) -> Result<Params, ParamError> {
    for k in given.keys() {
        if !info.params.iter().any(|p| p.name == k) {
            let valid: Vec<&str> = info.params.iter().map(|p| p.name).collect();
            return Err(ParamError::Unknown {
                name: k.clone(),
                workload: info.name,
                valid: if valid.is_empty() {
                    "none".to_string()
                } else {
                    valid.join(", ")
                },
            });
        }
    }
    Ok(info
        .params
        .iter()
        .map(|p| {
            (
                p.name.to_string(),
                given
                    .get(p.name)
                    .cloned()
                    .unwrap_or_else(|| p.default.to_string()),
            )
        })
        .collect())
}

/// Parse a parameter as an unsigned integer, naming it when malformed.
pub fn param_u64(params: &Params, name: &str) -> anyhow::Result<u64> {
    let v = params
        .get(name)
        .ok_or_else(|| anyhow::anyhow!("--param {name}: missing"))?;
    v.replace('_', "")
        .parse()
        .map_err(|_| anyhow::anyhow!("--param {name}={v}: expected a non-negative integer"))
}

/// Parse a size parameter: a number of bytes with an optional binary
/// suffix `K`/`KiB`, `M`/`MiB`, `G`/`GiB` (any case). Decimal `KB`/`MB`
/// are refused rather than guessed at.
pub fn param_bytes(params: &Params, name: &str) -> anyhow::Result<u64> {
    let v = params
        .get(name)
        .ok_or_else(|| anyhow::anyhow!("--param {name}: missing"))?;
    let s = v.trim().replace('_', "");
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = s[digits.len()..].to_ascii_lowercase();
    let mult: u64 = match suffix.as_str() {
        "" | "b" => 1,
        "k" | "ki" | "kib" => 1 << 10,
        "m" | "mi" | "mib" => 1 << 20,
        "g" | "gi" | "gib" => 1 << 30,
        _ => bail!(
            "--param {name}={v}: expected bytes, optionally with K/KiB, M/MiB or G/GiB \
             (binary units)"
        ),
    };
    let n: u64 = digits.parse().map_err(|_| {
        anyhow::anyhow!("--param {name}={v}: expected a non-negative number of bytes")
    })?;
    n.checked_mul(mult)
        .ok_or_else(|| anyhow::anyhow!("--param {name}={v}: too large"))
}

/// Parse `corrupt` (test-only switch): 0 or 1.
pub fn param_corrupt(params: &Params) -> anyhow::Result<bool> {
    match param_u64(params, "corrupt")? {
        0 => Ok(false),
        1 => Ok(true),
        c => bail!("--param corrupt={c}: expected 0 or 1"),
    }
}
