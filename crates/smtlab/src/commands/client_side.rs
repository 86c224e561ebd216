//! What `smtlab load http` and `smtlab load chat` share: the check of
//! `--cpus`, how a latency is written, and the exit status of a run.

use anyhow::Context;
use smtlab_types::CpuSet;

use crate::exit::{self, usage};

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
