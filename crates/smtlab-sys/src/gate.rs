//! The start gate: a child that stops just before exec'ing its program,
//! says it is ready, and waits until the parent opens the gate. The parent
//! uses the pause to attach perf counters to the child's pid (with
//! `enable_on_exec`) and to release several children at once, and starts its
//! clock only once the child's own start-up is over.
//!
//! Called by execute's user-command runner (the parent side) and by the
//! CLI's hidden `smtlab __gate` (the child side, [`wait_at_gate`]).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::process::Command;

use smtlab_types::CpuSet;

use crate::child::set_pre_exec;

/// The descriptor on which a gated child finds its gate (see
/// [`configure_gated_child`] and [`wait_at_gate`]).
pub const GATE_FD: i32 = 3;
/// The descriptor on which a gated child says it has reached the gate.
pub const READY_FD: i32 = 4;

/// The parent's ends of a gate: wait on `ready`, then open with `gate`.
pub struct Gate {
    pub gate: OwnedFd,
    pub ready: OwnedFd,
}

/// Two close-on-exec pipes for one gated child: the parent keeps the
/// [`Gate`], the child's ends go to [`configure_gated_child`].
pub fn gate_pipes() -> io::Result<(Gate, (OwnedFd, OwnedFd))> {
    let (gate_r, gate_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let (ready_r, ready_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    Ok((
        Gate {
            gate: gate_w,
            ready: ready_r,
        },
        (gate_r, ready_w),
    ))
}

impl Gate {
    /// Block until the child has reached its gate (or died: EOF).
    pub fn wait_ready(&self) {
        let mut byte = [0u8; 1];
        let _ = nix::unistd::read(self.ready.as_raw_fd(), &mut byte);
    }

    /// Let the child go on to exec its program.
    pub fn open(self) {
        let _ = nix::unistd::write(&self.gate, b"g");
    }
}

/// [`configure_child`](crate::configure_child), and (if `gate` is given)
/// hand the child the read end of a gate pipe as descriptor [`GATE_FD`].
/// The program exec'd is then `smtlab __gate PROGRAM...`, which blocks in
/// [`wait_at_gate`] until the parent writes a byte (or closes the pipe) and
/// then execs PROGRAM. (Blocking in the pre-exec hook itself would
/// deadlock: `Command::spawn` waits for the exec.)
pub fn configure_gated_child(
    cmd: &mut Command,
    cpus: Option<&CpuSet>,
    gate: Option<(RawFd, RawFd)>,
) -> io::Result<()> {
    let dups = gate.map(|(gate_fd, ready_fd)| [(gate_fd, GATE_FD), (ready_fd, READY_FD)]);
    set_pre_exec(cmd, cpus, dups)
}

/// In `smtlab __gate`: say "ready" on [`READY_FD`] (so the parent starts
/// its clock only once this process's own start-up is over), block until
/// the parent opens the gate (a byte or EOF on [`GATE_FD`]), then close both
/// so the program exec'd next does not inherit them.
pub fn wait_at_gate() {
    let _ = nix::unistd::write(
        // SAFETY: READY_FD was placed by configure_gated_child and is closed
        // right after; nothing else in this process owns it.
        unsafe { BorrowedFd::borrow_raw(READY_FD) },
        b"r",
    );
    let _ = nix::unistd::close(READY_FD);
    let mut byte = [0u8; 1];
    // Any outcome (a byte, EOF, an error) releases the child.
    let _ = nix::unistd::read(GATE_FD, &mut byte);
    let _ = nix::unistd::close(GATE_FD);
}
