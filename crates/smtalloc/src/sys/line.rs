//! One line of text formatted into a stack buffer: how smtalloc writes to
//! stderr (option warnings, verbose facts, the statistics) without
//! allocating, since it runs inside `malloc`.
//!
//! Used by `init` (option warnings, verbose facts), `arena` (the VMA name,
//! verbose facts) and `stats`.

use core::fmt::{self, Write};

/// One formatted line in a stack buffer (truncated if too long).
pub struct Line {
    buf: [u8; 512],
    len: usize,
}

impl Default for Line {
    fn default() -> Self {
        Self::new()
    }
}

impl Line {
    pub fn new() -> Self {
        Line {
            buf: [0; 512],
            len: 0,
        }
    }
    pub fn push_fmt(&mut self, args: fmt::Arguments<'_>) {
        let _ = self.write_fmt(args);
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}
