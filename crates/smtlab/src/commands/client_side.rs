//! What `smtlab load http` and `smtlab load chat` share: the client's
//! CPUs (`--cpus` checked, or chosen away from the server), the progress
//! shown while the load runs, how a latency and the errors are written,
//! and the exit status of a run.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smtlab_serving::client_cpus::{self, ClientCpus};
use smtlab_serving::Latency;
use smtlab_types::CpuSet;

use crate::exit::{self, usage};

/// How often the progress shown is brought up to date.
const TICK: Duration = Duration::from_millis(100);

/// `--cpus`: every CPU one this process may run on.
pub fn check_cpus(cpus: &CpuSet) -> anyhow::Result<()> {
    let allowed = smtlab_sys::current_affinity().context("reading this process's CPUs")?;
    match cpus.difference(&allowed).first() {
        Some(cpu) => Err(usage(format!(
            "--cpus {cpus}: CPU {cpu} is not one this process may run on; allowed: {allowed}"
        ))),
        None => Ok(()),
    }
}

/// The load generator's CPUs: `--cpus` once checked, else those the
/// server at `target` does not use (and why).
pub fn choose_cpus(target: SocketAddr, cpus: Option<&CpuSet>) -> anyhow::Result<ClientCpus> {
    if let Some(c) = cpus {
        check_cpus(c)?;
    }
    Ok(client_cpus::choose(target, cpus))
}

/// A progress bar on stderr drawn with `template` (`len`: its end, or
/// `None` for a spinner); hidden when `quiet` (`--json`, or stderr not a
/// terminal).
pub fn progress(quiet: bool, len: Option<u64>, template: &str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

/// Run `load` on a thread of its own while this one calls `tick` with the
/// time since the start, every [`TICK`] (to draw the progress); `None`
/// when that thread ended without a result (it panicked).
pub fn while_ticking<R: Send>(
    load: impl FnOnce() -> R + Send,
    mut tick: impl FnMut(Duration),
) -> Option<R> {
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = tx.send(load());
        });
        let start = Instant::now();
        loop {
            match rx.recv_timeout(TICK) {
                Ok(r) => break Some(r),
                Err(mpsc::RecvTimeoutError::Timeout) => tick(start.elapsed()),
                Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            }
        }
    })
}

/// A latency in µs, in the unit that reads best.
pub fn latency(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.0} µs")
    }
}

/// The summary's latency line: the percentiles, the maximum and the mean.
pub fn latency_line(l: &Latency) -> String {
    format!(
        "  latency       p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (mean {})",
        latency(l.p50),
        latency(l.p90),
        latency(l.p99),
        latency(l.p999),
        latency(l.max),
        latency(l.mean)
    )
}

/// The errors of a run by kind (`timeout 3, reset 1`), or `none`.
pub fn error_counts(errors: &BTreeMap<String, u64>) -> String {
    if errors.is_empty() {
        return "none".to_string();
    }
    errors
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The exit status of a finished load run: [`exit::NO_RESULT`] with the
/// reason on stderr when it has no result (`failure`), else 0.
pub fn exit_status(failure: &Option<String>) -> i32 {
    match failure {
        Some(why) => {
            exit::stderr_line(&format!("smtlab: no result: {why}"));
            exit::NO_RESULT
        }
        None => 0,
    }
}
