//! Exit codes and error printing.
//!
//! A user mistake (a bad flag value, a missing file, a malformed expression)
//! is a [`UsageError`]: one line on stderr naming what is wrong, exit code 2.
//! Anything else is a failure of the tool or the machine: the whole error
//! chain on stderr, exit code 1. Never a panic or a backtrace.

use std::fmt;
use std::io::Write;

/// Writes `line` and its newline to stderr in one `write`: `eprintln!`
/// writes the pieces of its format one by one, and under a launcher
/// (`mpirun` gathers every rank's stderr and prints its own messages
/// between them) another process's line could land inside ours. One
/// write of less than a pipe's 4 KiB is never split.
pub fn stderr_line(line: &str) {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    // Nothing to do if stderr is gone.
    let _ = std::io::stderr().lock().write_all(&bytes);
}

/// Exit code for bad input.
pub const USAGE: i32 = 2;

/// Exit code of a run that ended but left a point without one successful
/// sample (a program that is not there, wrong results, timeouts): the
/// samples are stored with their reasons, but there is no result to use.
pub const NO_RESULT: i32 = 3;

/// The exit code of a finished run: [`NO_RESULT`] when a point has no
/// successful sample (said on stderr), else 0.
pub fn of_results(run_id: i64, points: &[smtlab_analyse::summary::PointSummary]) -> i32 {
    let empty: Vec<String> = points
        .iter()
        .filter(|p| p.samples == 0)
        .map(|p| p.point.index.to_string())
        .collect();
    if empty.is_empty() {
        return 0;
    }
    stderr_line(&format!(
        "smtlab: run {run_id}: {} of {} points have no successful sample (point {}); their \
         failures are listed above",
        empty.len(),
        points.len(),
        empty.join(", ")
    ));
    NO_RESULT
}

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

/// A command-line parse error from clap as one line: clap's message
/// without its `Usage:` and `For more information` lines, the lines that
/// carry facts (the missing arguments, the possible values, a tip) kept.
/// Help and version requests are not errors: clap prints them and exits.
pub fn clap_error(e: clap::Error) -> anyhow::Error {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    // A value our own parsers refused: their message names the flag and
    // the value and says what is valid, so it is the whole error.
    if e.kind() == ErrorKind::ValueValidation {
        if let Some(own) = std::error::Error::source(&e).and_then(crate::flags::own_message) {
            return usage(own);
        }
    }
    let text = e.render().to_string();
    let kept: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect();
    // `run` joins the kept lines into one.
    usage(kept.join("\n"))
}

/// A message as one line: its non-empty lines joined, with a space after
/// a line that ends in `:` (a list follows) and `; ` otherwise.
fn one_line(text: &str) -> String {
    let mut line = String::new();
    for l in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !line.is_empty() {
            line.push_str(if line.ends_with(':') { " " } else { "; " });
        }
        line.push_str(l);
    }
    line
}

/// An error and its causes, `: `-separated, as anyhow's `{:#}` but
/// without a cause the message before it already ends with (an error
/// that both quotes its source and returns it: "cannot create directory
/// X: Operation not permitted (os error 1)" said it twice).
fn chain(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Run a command and map its outcome to an exit code.
pub fn run(outcome: anyhow::Result<i32>) -> i32 {
    match outcome {
        Ok(code) => code,
        Err(e) => {
            if let Some(u) = e.downcast_ref::<UsageError>() {
                // One line, whatever a library's message held.
                stderr_line(&format!("smtlab: {}", one_line(&u.0)));
                USAGE
            } else {
                stderr_line(&format!("smtlab: {}", chain(&e)));
                1
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that quotes its source in its message and returns it too,
    /// as the report's do.
    #[derive(Debug)]
    struct QuotesItsSource(std::io::Error);

    impl fmt::Display for QuotesItsSource {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "report: cannot create directory /sys/rep: {}", self.0)
        }
    }

    impl std::error::Error for QuotesItsSource {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_already_quoted_is_said_once() {
        let os = std::io::Error::from_raw_os_error(1);
        let e = anyhow::Error::new(QuotesItsSource(os)).context("writing the report");
        assert_eq!(
            chain(&e),
            "writing the report: report: cannot create directory /sys/rep: Operation not \
             permitted (os error 1)"
        );
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(chain(&plain), "outer: inner");
    }
}
