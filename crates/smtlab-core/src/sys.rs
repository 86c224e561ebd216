//! The only module that talks to the kernel directly: affinity, and (for
//! `smtlab pin`) reading where threads ran. Every `unsafe` block in smtlab
//! lives here, each with a `// SAFETY:` line.
#![allow(unsafe_code)]

use std::io;

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet as NixCpuSet};
use nix::unistd::Pid;

use crate::cpuset::CpuSet;

/// The CPUs this process (its calling thread) may run on.
pub fn current_affinity() -> io::Result<CpuSet> {
    let set = sched_getaffinity(Pid::from_raw(0)).map_err(io::Error::from)?;
    Ok((0..NixCpuSet::count() as u32)
        .filter(|&c| set.is_set(c as usize).unwrap_or(false))
        .collect())
}

/// Restrict a thread or process (`tid` 0: the caller) to `cpus`.
pub fn set_affinity(tid: i32, cpus: &CpuSet) -> io::Result<()> {
    let mut set = NixCpuSet::new();
    for c in cpus.iter() {
        set.set(c as usize).map_err(io::Error::from)?;
    }
    sched_setaffinity(Pid::from_raw(tid), &set).map_err(io::Error::from)
}

// ---------------------------------------------------------------------------
// Starting and supervising a child program (`smtlab pin`, later the engine).
// ---------------------------------------------------------------------------

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use nix::errno::Errno;
use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag};

/// Signals that [`SignalForwarding`] passes on to the child.
pub const FORWARDED_SIGNALS: [Signal; 4] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

fn nix_set(cpus: &CpuSet) -> io::Result<NixCpuSet> {
    let mut set = NixCpuSet::new();
    for c in cpus.iter() {
        set.set(c as usize).map_err(io::Error::from)?;
    }
    Ok(set)
}

/// Arrange for the child that `cmd` will start to
/// * restrict itself to `cpus` (if given) before `exec`, so the whole process
///   and every thread it makes inherit that affinity;
/// * be killed (SIGKILL) if smtlab dies, so no child is ever left behind;
/// * start with the default action for [`FORWARDED_SIGNALS`] (smtlab's
///   forwarding handler must not run in the child between fork and exec).
pub fn configure_child(cmd: &mut Command, cpus: Option<&CpuSet>) -> io::Result<()> {
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
        Ok(())
    };
    // SAFETY: `hook` runs in the forked child before exec, where only
    // async-signal-safe operations are allowed. It allocates nothing (the
    // mask and the SIG_DFL action were built in the parent; `io::Error`s from
    // raw OS errors do not allocate) and only makes the system calls
    // sigaction, prctl, getppid and sched_setaffinity.
    unsafe {
        cmd.pre_exec(hook);
    }
    Ok(())
}

static FORWARD_TO: AtomicI32 = AtomicI32::new(0);
static PENDING: AtomicI32 = AtomicI32::new(0);
static FORWARDING: AtomicBool = AtomicBool::new(false);

extern "C" fn forward_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let code = if info.is_null() {
        libc::SI_USER
    } else {
        // SAFETY: for an SA_SIGINFO handler the kernel passes a valid
        // siginfo_t that lives for the duration of the call.
        unsafe { (*info).si_code }
    };
    // Sent by the terminal (Ctrl-C, Ctrl-\, hangup): it went to the whole
    // foreground process group, the child included; sending it again would
    // deliver it twice.
    if code == libc::SI_KERNEL {
        return;
    }
    let pid = FORWARD_TO.load(Ordering::SeqCst);
    if pid > 0 {
        if let Ok(s) = Signal::try_from(sig) {
            let _ = signal::kill(Pid::from_raw(pid), s);
        }
    } else {
        PENDING.store(sig, Ordering::SeqCst);
    }
}

/// While alive, SIGINT/SIGTERM/SIGHUP/SIGQUIT sent to smtlab (by `kill`,
/// `timeout`, a batch system) are forwarded to the child, and smtlab itself
/// keeps running so it can report. Signals from the terminal (Ctrl-C) reach
/// the child directly, since it stays in smtlab's foreground process group
/// (so it can still read the terminal), and are not sent twice. Dropping
/// restores the previous handlers. One at a time per process.
pub struct SignalForwarding {
    previous: Vec<(Signal, SigAction)>,
}

impl SignalForwarding {
    pub fn install() -> io::Result<Self> {
        if FORWARDING.swap(true, Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "signal forwarding is already installed",
            ));
        }
        FORWARD_TO.store(0, Ordering::SeqCst);
        PENDING.store(0, Ordering::SeqCst);
        let act = SigAction::new(
            SigHandler::SigAction(forward_signal),
            SaFlags::SA_SIGINFO | SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        let mut me = SignalForwarding {
            previous: Vec::new(),
        };
        for s in FORWARDED_SIGNALS {
            // SAFETY: `forward_signal` is async-signal-safe: it only reads
            // and writes atomics and calls kill(2).
            let old = unsafe { signal::sigaction(s, &act) }.map_err(io::Error::from)?;
            me.previous.push((s, old));
        }
        Ok(me)
    }

    /// Forward from now on to `pid` (and deliver a signal that arrived
    /// before the child existed).
    pub fn set_child(&self, pid: i32) {
        FORWARD_TO.store(pid, Ordering::SeqCst);
        let p = PENDING.swap(0, Ordering::SeqCst);
        if p != 0 {
            if let Ok(s) = Signal::try_from(p) {
                let _ = signal::kill(Pid::from_raw(pid), s);
            }
        }
    }

    /// Stop forwarding (call before reaping the child, so a recycled pid is
    /// never signalled). The handlers stay installed until drop.
    pub fn clear_child(&self) {
        FORWARD_TO.store(0, Ordering::SeqCst);
    }

    /// The last signal received while no child was set, if any.
    pub fn pending(&self) -> Option<i32> {
        match PENDING.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

impl Drop for SignalForwarding {
    fn drop(&mut self) {
        FORWARD_TO.store(0, Ordering::SeqCst);
        for (s, old) in self.previous.drain(..).rev() {
            // SAFETY: re-installing the action that was in place before.
            let _ = unsafe { signal::sigaction(s, &old) };
        }
        FORWARDING.store(false, Ordering::SeqCst);
    }
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

/// The CPUs thread `tid` may run on (`sched_getaffinity(tid)`).
pub fn thread_affinity(tid: i32) -> io::Result<CpuSet> {
    let set = sched_getaffinity(Pid::from_raw(tid)).map_err(io::Error::from)?;
    Ok((0..NixCpuSet::count() as u32)
        .filter(|&c| set.is_set(c as usize).unwrap_or(false))
        .collect())
}

/// This process's effective user id (to check who owns a directory).
pub fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// True if the filesystem holding `path` is mounted `noexec` (a shared
/// object there cannot be mapped executable, so LD_PRELOAD would fail).
pub fn is_noexec(path: &std::path::Path) -> io::Result<bool> {
    let st = nix::sys::statvfs::statvfs(path).map_err(io::Error::from)?;
    Ok(st.flags().contains(nix::sys::statvfs::FsFlags::ST_NOEXEC))
}
