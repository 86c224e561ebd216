//! Helpers shared by the CLI integration tests (each test binary uses a
//! subset of them).
#![allow(dead_code)]

use std::io::Write;

use assert_cmd::Command;
use serde_json::Value;

/// Say why a test is skipped. Written straight to the process's stderr,
/// because the test harness swallows `eprintln!` of passing tests and a skip
/// must be visible in CI's log.
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("?");
    let _ = std::io::stderr().write_all(format!("skipped: {name}: {reason}\n").as_bytes());
}

/// The smtlab binary under test.
pub fn smtlab() -> Command {
    Command::cargo_bin("smtlab").unwrap()
}

/// Run smtlab, insist on success, and parse its stdout as JSON.
pub fn json(args: &[&str]) -> Value {
    let out = smtlab().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Run smtlab, insist on exit code `code` (3: a point has no successful
/// sample), and parse its stdout as JSON.
pub fn json_exit(args: &[&str], code: i32) -> Value {
    let out = smtlab().args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A usage error: exit 2, exactly one line on stderr naming `needle`, and
/// never a panic.
pub fn assert_usage_error(args: &[&str], needle: &str) {
    let out = smtlab().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line, got {err}"
    );
    assert!(
        err.contains(needle),
        "{args:?}: `{err}` should name `{needle}`"
    );
    assert!(!err.contains("panicked"), "{err}");
}
