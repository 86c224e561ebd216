//! Writing to stdout without panicking when the reader goes away.
//!
//! `println!` panics on a closed pipe (`smtlab topology | head`); a closed
//! pipe is the reader saying it has enough, so it is not an error here.

use std::io::{ErrorKind, Write};

/// Write `text` to stdout; a closed pipe is success.
pub fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// The plural ending of a count's noun: "" for 1, "s" otherwise
/// ("1 run", "2 runs", "0 samples").
pub fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
