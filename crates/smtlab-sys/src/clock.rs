//! The one clock that windows are measured on. Called by execute: workers
//! and user commands stamp their windows with it.

/// Seconds on CLOCK_MONOTONIC: one clock for every process on the machine,
/// so windows measured in different worker processes can be compared.
pub fn monotonic_s() -> f64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always available on Linux");
    t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9
}
