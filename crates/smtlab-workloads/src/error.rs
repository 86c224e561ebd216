//! What a workload can fail with: a parameter refused when the run is
//! planned ([`ParamError`]), a set-up that cannot go on
//! ([`WorkloadError`]), and a result that does not verify
//! ([`WrongResult`]). Every message names what is at fault.

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

/// Why a workload cannot be set up with what it was given; every message
/// names the parameter or flag at fault and what would be valid, and is
/// one line (the CLI prints it as a usage error when a run is planned).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    /// `--param NAME=VALUE` refused; `why` says what would be valid.
    #[error("--param {name}={value}: {why}")]
    Param {
        name: String,
        value: String,
        why: String,
    },
    /// A parameter absent from the set given to the workload (every caller
    /// fills in the defaults with `resolve_params` first).
    #[error("--param {name}: missing")]
    Missing { name: String },
    /// The amount of work or the mode does not suit the workload.
    #[error("{0}")]
    Work(String),
    /// Setting a worker up failed for another reason.
    #[error("{0}")]
    Setup(String),
    /// A parameter's name or type refused ([`ParamError`]), by
    /// [`Workload::parse`](crate::Workload::parse).
    #[error(transparent)]
    Params(#[from] ParamError),
}

impl WorkloadError {
    /// `--param NAME=VALUE` refused because of `why`.
    pub fn param(name: &str, value: impl ToString, why: impl Into<String>) -> WorkloadError {
        WorkloadError::Param {
            name: name.to_string(),
            value: value.to_string(),
            why: why.into(),
        }
    }

    pub fn missing(name: &str) -> WorkloadError {
        WorkloadError::Missing {
            name: name.to_string(),
        }
    }
}

/// Why a sample's result is wrong: what a workload's check found, in words
/// (`jbb warehouse 1: district 3 YTD ...`). The sample fails with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct WrongResult(pub String);

impl From<String> for WrongResult {
    fn from(what: String) -> Self {
        WrongResult(what)
    }
}

impl From<&str> for WrongResult {
    fn from(what: &str) -> Self {
        WrongResult(what.to_string())
    }
}

/// The message, to search or print.
impl std::ops::Deref for WrongResult {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}
