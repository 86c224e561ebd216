//! Helpers shared by this crate's tests (compiled for tests only).

use std::io::Write;

/// Say on stderr that a test could not check what it is for on this
/// machine, and why, so a pass is never mistaken for coverage.
pub(crate) fn skip(reason: &str) {
    let t = std::thread::current();
    let _ = std::io::stderr()
        .write_all(format!("skipped: {}: {reason}\n", t.name().unwrap_or("?")).as_bytes());
}

/// Transparent huge pages are "always" here: fresh memory may fault in as a
/// few huge pages rather than one fault per 4 kB page.
pub(crate) fn thp_always() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| s.contains("[always]"))
}
