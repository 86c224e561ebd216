//! Helpers shared by the CLI integration tests.

use std::io::Write;

/// Say why a test is skipped. Written straight to the process's stderr,
/// because the test harness swallows `eprintln!` of passing tests and a skip
/// must be visible in CI's log.
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("?");
    let _ = std::io::stderr().write_all(format!("skipped: {name}: {reason}\n").as_bytes());
}
