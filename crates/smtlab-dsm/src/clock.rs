//! Nanoseconds on one monotonic clock for the whole process: what the
//! message layer's timers and the time split are measured in.
//!
//! The `sigio` handler and the SIGSEGV handler read it, at any point of
//! the computing thread they interrupt — including the middle of the
//! computing thread's own read. So it is one `clock_gettime` and nothing
//! else: no state set up on first use. (It once counted from an epoch
//! taken on first use, behind a `OnceLock`; a SIGIO that came while the
//! computing thread was taking that epoch ran a handler that waited for
//! the `OnceLock` its own thread was filling, forever, and the other
//! ranks gave up on that rank after two minutes. Under emulation, where a
//! clock read is a system call and a signal is delivered on its return,
//! that was one sample in a dozen.)

use nix::time::{clock_gettime, ClockId};

/// Nanoseconds on CLOCK_MONOTONIC (since boot). Async-signal-safe: a
/// system call or a vDSO read, no lock, no lazily set state.
pub fn now_ns() -> u64 {
    // CLOCK_MONOTONIC cannot fail on Linux; 0 would only make one wait
    // look longer or shorter.
    clock_gettime(ClockId::CLOCK_MONOTONIC).map_or(0, |t| {
        (t.tv_sec() as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(t.tv_nsec() as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    #[test]
    fn the_clock_is_the_kernels_monotonic_clock_with_nothing_set_up_first() {
        // No epoch of this process: the very first read is already the
        // kernel's CLOCK_MONOTONIC, the same for every process.
        let ns = now_ns();
        let s = smtlab_sys::monotonic_s();
        assert!((ns as f64 * 1e-9 - s).abs() < 1.0, "{ns} ns, {s} s");
        assert!(now_ns() >= ns);
    }

    const CHILD: &str = "SMTLAB_DSM_TEST_CLOCK_CHILD";
    const TRIES: u64 = 200;
    /// A try that takes this long is hung (one takes a few milliseconds).
    const HUNG: Duration = Duration::from_secs(10);

    /// One try, in a fresh process (the first read is once per process):
    /// the I/O signal every 20 µs, its handler reading the clock, and this
    /// thread's first read `lead_ns` before the first signal is due; the
    /// tries sweep 0 to 3 µs, so the signal lands at every point of it.
    fn one_try(lead_ns: u64) {
        smtlab_sys::install_io_handler(|| {
            std::hint::black_box(now_ns());
        })
        .unwrap();
        // The signal when it is due, not up to 50 µs later.
        nix::sys::prctl::set_timerslack(1).unwrap();
        let period = Duration::from_micros(20);
        let start = Instant::now();
        let _flood = smtlab_sys::IoTimer::start(period).unwrap();
        let due = period.saturating_sub(Duration::from_nanos(lead_ns));
        while start.elapsed() < due {
            std::hint::spin_loop();
        }
        std::hint::black_box(now_ns());
    }

    /// What the sigio handler does at any point of the computing thread:
    /// read the clock — here while the thread reads it for the first time.
    /// A clock that set itself up on first use (an epoch behind a
    /// `OnceLock`) hung here, the handler waiting for the set-up its own
    /// thread had begun (on the 2-vCPU development VM within the first 75
    /// tries in 8 runs of 8); a `sigio` rank then stopped serving, and the
    /// others gave up on it after two minutes. When a signal comes is the
    /// machine's doing, so this catches such a clock nearly always, not
    /// surely.
    #[test]
    fn a_signal_handler_may_read_the_clock_during_the_first_read() {
        if let Some(lead) = std::env::var_os(CHILD) {
            one_try(lead.to_string_lossy().parse().unwrap());
            return;
        }
        let exe = std::env::current_exe().unwrap();
        let name = format!(
            "{}::a_signal_handler_may_read_the_clock_during_the_first_read",
            module_path!().split_once("::").unwrap().1
        );
        for i in 0..TRIES {
            let mut child = Command::new(&exe)
                .args([name.as_str(), "--exact", "--test-threads=1"])
                .env(CHILD, (i % 40 * 75).to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let started = Instant::now();
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                if started.elapsed() > HUNG {
                    child.kill().unwrap();
                    child.wait().unwrap();
                    panic!(
                        "try {i}: hung for {} s, a signal handler waiting inside the clock",
                        HUNG.as_secs()
                    );
                }
                std::thread::sleep(Duration::from_millis(1));
            };
            assert!(status.success(), "try {i}: {status}");
        }
    }
}
