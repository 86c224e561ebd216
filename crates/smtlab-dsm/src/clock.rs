//! Nanoseconds on one monotonic clock for the whole process: what the
//! message layer's timers and the time split are measured in. Reading it
//! is a vDSO `clock_gettime`, safe in a signal handler.

use std::sync::OnceLock;
use std::time::Instant;

static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Nanoseconds since the first call in this process.
pub fn now_ns() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}
