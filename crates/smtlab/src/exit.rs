//! Exit codes and error printing.
//!
//! A user mistake (a bad flag value, a missing file, a malformed expression)
//! is a [`UsageError`]: one line on stderr naming what is wrong, exit code 2.
//! Anything else is a failure of the tool or the machine: the whole error
//! chain on stderr, exit code 1. Never a panic or a backtrace.

use std::fmt;

/// Exit code for bad input.
pub const USAGE: i32 = 2;

/// A user mistake, shown as one line.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Turn any displayable error into a usage error (exit 2).
pub fn usage(e: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(UsageError(e.to_string()))
}

/// Run a command and map its outcome to an exit code.
pub fn run(outcome: anyhow::Result<i32>) -> i32 {
    match outcome {
        Ok(code) => code,
        Err(e) => {
            if let Some(u) = e.downcast_ref::<UsageError>() {
                eprintln!("smtlab: {u}");
                USAGE
            } else {
                eprintln!("smtlab: {e:#}");
                1
            }
        }
    }
}
