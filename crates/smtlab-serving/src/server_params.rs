//! What the web and chat servers' parameter checks share
//! (`smtlab_web::params`, `smtlab_chat::params`): the refusals both give
//! ([`ServerParamError`]), a count in range, and the load generator's CPUs
//! given as a parameter (`client_cpus`). Each product's own parameters,
//! and its own refusals, are in its crate.

use smtlab_types::{CpuSet, ServerKind};

/// A server point's parameter refused in a way both products share; each
/// message names the parameter and its value and says what would be valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerParamError {
    /// A count outside `min..=max` (or not a number).
    #[error("--param {param}={value}: expected {min} to {max}")]
    OutOfRange {
        param: String,
        value: String,
        min: usize,
        max: usize,
    },
    #[error("--client-cpus {value}: expected a CPU list such as 1 or 2-3")]
    ClientCpus { value: String },
    /// A parameter `server` does not take; `takes`: those it does.
    #[error("--param {param}: `{server}` has no such parameter; it takes {}", takes.join(", "))]
    Unknown {
        server: ServerKind,
        param: String,
        takes: Vec<&'static str>,
    },
}

/// `param=value` as a count in `min..=max`.
pub fn count(param: &str, value: &str, min: usize, max: usize) -> Result<usize, ServerParamError> {
    match value.parse::<usize>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(ServerParamError::OutOfRange {
            param: param.into(),
            value: value.into(),
            min,
            max,
        }),
    }
}

/// `client_cpus=LIST` given as a parameter: a non-empty CPU list.
pub fn client_cpus(value: &str) -> Result<CpuSet, ServerParamError> {
    CpuSet::parse_list(value)
        .ok()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ServerParamError::ClientCpus {
            value: value.into(),
        })
}
