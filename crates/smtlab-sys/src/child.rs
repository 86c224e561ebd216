//! Child processes: preparing a program to exec (affinity, death signal,
//! default signal actions), forking a worker, waiting for a child with its
//! resource usage, and signalling it.
//!
//! Called by execute (built-in workers, user commands, `smtlab pin`); the
//! start gate (`gate.rs`) adds its descriptors through the same pre-exec
//! hook.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::errno::Errno;
use nix::sched::sched_setaffinity;
use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;

use smtlab_types::CpuSet;

use crate::affinity::nix_set;
use crate::signals::FORWARDED_SIGNALS;

/// Arrange for the child that `cmd` will start to
/// * restrict itself to `cpus` (if given) before `exec`, so the whole process
///   and every thread it makes inherit that affinity;
/// * be killed (SIGKILL) if smtlab dies, so no child is ever left behind;
/// * start with the default action for [`FORWARDED_SIGNALS`] (smtlab's
///   forwarding handler must not run in the child between fork and exec).
pub fn configure_child(cmd: &mut Command, cpus: Option<&CpuSet>) -> io::Result<()> {
    set_pre_exec(cmd, cpus, None)
}

/// The hook behind [`configure_child`] and
/// [`configure_gated_child`](crate::configure_gated_child): each `(from,
/// to)` of `dups` moves descriptor `from` to number `to` in the child (the
/// gate's pipes to their fixed numbers).
pub(crate) fn set_pre_exec(
    cmd: &mut Command,
    cpus: Option<&CpuSet>,
    dups: Option<[(std::os::fd::RawFd, std::os::fd::RawFd); 2]>,
) -> io::Result<()> {
    // Built here, in the parent: the child may not allocate.
    let mask = cpus.map(nix_set).transpose()?;
    let parent = nix::unistd::getpid();
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    let hook = move || -> io::Result<()> {
        for s in FORWARDED_SIGNALS {
            // SAFETY: installing SIG_DFL cannot violate any handler invariant.
            unsafe { signal::sigaction(s, &default) }?;
        }
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
        if nix::unistd::getppid() != parent {
            // smtlab died before PDEATHSIG was armed: do not run orphaned.
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        if let Some(m) = &mask {
            sched_setaffinity(Pid::from_raw(0), m)?;
        }
        for (from, to) in dups.into_iter().flatten() {
            // dup2 clears close-on-exec on the copies, so they survive exec.
            nix::unistd::dup2(from, to)?;
        }
        Ok(())
    };
    // SAFETY: `hook` runs in the forked child before exec, where only
    // async-signal-safe operations are allowed. It allocates nothing (the
    // mask and the SIG_DFL action were built in the parent; `io::Error`s from
    // raw OS errors do not allocate) and only makes the system calls
    // sigaction, prctl, getppid, sched_setaffinity and dup2.
    unsafe {
        cmd.pre_exec(hook);
    }
    Ok(())
}

/// Fork a child that runs `child` and exits with its return code, never
/// returning into the caller's code. Used for prefork-style workers
/// (`--spawn fork`). The child gets PDEATHSIG=SIGKILL like exec'd workers.
///
/// Call it only while the calling process has a single thread: after
/// `fork` only the calling thread exists in the child, and a lock held by
/// another thread at that moment would stay locked forever.
pub fn fork_child(child: impl FnOnce() -> i32) -> io::Result<i32> {
    let parent = nix::unistd::getpid();
    // SAFETY: the caller guarantees the process is single-threaded (see the
    // doc comment), so the child may run arbitrary code, including
    // allocation, after fork.
    match unsafe { nix::unistd::fork() }.map_err(io::Error::from)? {
        nix::unistd::ForkResult::Parent { child } => Ok(child.as_raw()),
        nix::unistd::ForkResult::Child => {
            let code = (|| {
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).ok()?;
                if nix::unistd::getppid() != parent {
                    return None;
                }
                Some(child())
            })()
            .unwrap_or(1);
            // Flush what Rust buffered, then leave without running the
            // parent's atexit handlers or destructors a second time.
            use std::io::Write;
            let _ = std::io::stdout().flush();
            // SAFETY: _exit is always safe to call; it ends the process.
            unsafe { libc::_exit(code) }
        }
    }
}

/// How a child ended, as `wait4` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildEnd {
    Exited(i32),
    Signaled(i32),
}

/// Wait for `pid` to end (blocking) and return how, with its resource usage
/// (and that of its own waited-for children): what `getrusage(RUSAGE_CHILDREN)`
/// cannot give per child.
pub fn wait4(pid: i32) -> io::Result<(ChildEnd, libc::rusage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `usage` are valid, writable and live for the
        // call; wait4 writes only into them.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let end = if libc::WIFSIGNALED(status) {
        ChildEnd::Signaled(libc::WTERMSIG(status))
    } else {
        ChildEnd::Exited(libc::WEXITSTATUS(status))
    };
    Ok((end, usage))
}

/// Block until child `pid` has exited, but leave it a zombie (WNOWAIT), so
/// `/proc/<pid>/task/*/stat` can still be read before it is reaped.
pub fn wait_exited_keep_zombie(pid: i32) -> io::Result<()> {
    loop {
        match waitid(
            Id::Pid(Pid::from_raw(pid)),
            WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
        ) {
            Ok(_) => return Ok(()),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Send `sig` to a process; a process that is already gone is not an error.
pub fn kill(pid: i32, sig: Signal) {
    let _ = signal::kill(Pid::from_raw(pid), sig);
}
