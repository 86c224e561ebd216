//! `smtlab __gate PROGRAM ARGS...` (hidden): wait until the parent smtlab
//! opens the gate, then become PROGRAM (exec). Lets smtlab create every
//! process of a `--cmd` sample, attach counters, and release them together.

use std::os::unix::process::CommandExt;

pub fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<i32> {
    let Some((program, rest)) = args.split_first() else {
        anyhow::bail!("__gate: no program to run");
    };
    smtlab_sys::wait_at_gate();
    let err = std::process::Command::new(program).args(rest).exec();
    eprintln!(
        "smtlab __gate: cannot run {}: {err}",
        program.to_string_lossy()
    );
    Ok(127)
}
