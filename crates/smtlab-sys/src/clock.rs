//! The one clock that windows are measured on, and the wall clock that
//! says when a sample started. Called by execute: workers and user
//! commands stamp their windows with the first, every sample its start
//! with the second.

/// Seconds on CLOCK_MONOTONIC: one clock for every process on the machine,
/// so windows measured in different worker processes can be compared.
pub fn monotonic_s() -> f64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always available on Linux");
    t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9
}

/// Seconds since the Unix epoch (the wall clock): when a sample started,
/// as stored. 0 on a clock set before 1970.
pub fn unix_now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
