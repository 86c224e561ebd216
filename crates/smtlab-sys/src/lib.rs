//! The only module that talks to the kernel directly: affinity, and (for
//! `smtlab pin`) reading where threads ran. Every `unsafe` block in smtlab
//! lives here, each with a `// SAFETY:` line.
#![allow(unsafe_code)]

use std::io;

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet as NixCpuSet};
use nix::unistd::Pid;

use smtlab_types::CpuSet;

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
// Starting and supervising a child program (`smtlab pin`, and the user commands of `smtlab run`).
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
    configure_gated_child(cmd, cpus, None)
}

/// The descriptor on which a gated child finds its gate (see
/// [`configure_gated_child`] and [`wait_at_gate`]).
pub const GATE_FD: i32 = 3;
/// The descriptor on which a gated child says it has reached the gate.
pub const READY_FD: i32 = 4;

/// The parent's ends of a gate: wait on `ready`, then open with `gate`.
pub struct Gate {
    pub gate: std::os::fd::OwnedFd,
    pub ready: std::os::fd::OwnedFd,
}

/// Two close-on-exec pipes for one gated child: the parent keeps the
/// [`Gate`], the child's ends go to [`configure_gated_child`].
pub fn gate_pipes() -> io::Result<(Gate, (std::os::fd::OwnedFd, std::os::fd::OwnedFd))> {
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
        let _ = nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(&self.ready), &mut byte);
    }

    /// Let the child go on to exec its program.
    pub fn open(self) {
        let _ = nix::unistd::write(&self.gate, b"g");
    }
}

/// [`configure_child`], and (if `gate` is given) hand the child the read end
/// of a gate pipe as descriptor [`GATE_FD`]. The program exec'd is then
/// `smtlab __gate PROGRAM...`, which blocks in [`wait_at_gate`] until the
/// parent writes a byte (or closes the pipe) and then execs PROGRAM. The
/// parent uses the pause to attach perf counters to the child's pid (with
/// `enable_on_exec`) and to release several children at once. (Blocking in
/// the pre-exec hook itself would deadlock: `Command::spawn` waits for the
/// exec.)
pub fn configure_gated_child(
    cmd: &mut Command,
    cpus: Option<&CpuSet>,
    gate: Option<(std::os::fd::RawFd, std::os::fd::RawFd)>,
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
        if let Some((gate_fd, ready_fd)) = gate {
            // dup2 clears close-on-exec on the copies, so they survive exec.
            nix::unistd::dup2(gate_fd, GATE_FD)?;
            nix::unistd::dup2(ready_fd, READY_FD)?;
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

/// Seconds on CLOCK_MONOTONIC: one clock for every process on the machine,
/// so windows measured in different worker processes can be compared.
pub fn monotonic_s() -> f64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always available on Linux");
    t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9
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

/// Ignore SIGINT in a worker: Ctrl-C reaches the whole foreground process
/// group, and it is smtlab, not the worker, that decides how to stop.
pub fn ignore_sigint() -> io::Result<()> {
    let ignore = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
    // SAFETY: installing SIG_IGN cannot violate any handler invariant.
    unsafe { signal::sigaction(Signal::SIGINT, &ignore) }.map_err(io::Error::from)?;
    Ok(())
}

/// Send `sig` to a process; a process that is already gone is not an error.
pub fn kill(pid: i32, sig: Signal) {
    let _ = signal::kill(Pid::from_raw(pid), sig);
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(sig: libc::c_int) {
    // Async-signal-safe: one atomic store, and (on the second Ctrl-C) restore
    // the default action so a third one kills smtlab outright.
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // SAFETY: signal(2) with SIG_DFL is async-signal-safe.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}

/// Make SIGINT and SIGTERM set a flag instead of killing smtlab, so a run
/// can stop cleanly: the current sample's workers are killed, everything
/// measured stays committed, the run is marked interrupted. Returns the flag.
pub fn interrupt_flag() -> io::Result<&'static AtomicBool> {
    let act = SigAction::new(
        SigHandler::Handler(on_interrupt),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for s in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: `on_interrupt` only touches an atomic and calls signal(2),
        // both async-signal-safe.
        unsafe { signal::sigaction(s, &act) }.map_err(io::Error::from)?;
    }
    Ok(&INTERRUPTED)
}

/// In `smtlab __gate`: say "ready" on [`READY_FD`] (so the parent starts
/// its clock only once this process's own start-up is over), block until
/// the parent opens the gate (a byte or EOF on [`GATE_FD`]), then close both
/// so the program exec'd next does not inherit them.
pub fn wait_at_gate() {
    let _ = nix::unistd::write(
        // SAFETY: READY_FD was placed by configure_gated_child and is closed
        // right after; nothing else in this process owns it.
        unsafe { std::os::fd::BorrowedFd::borrow_raw(READY_FD) },
        b"r",
    );
    let _ = nix::unistd::close(READY_FD);
    let mut byte = [0u8; 1];
    // Any outcome (a byte, EOF, an error) releases the child.
    let _ = nix::unistd::read(GATE_FD, &mut byte);
    let _ = nix::unistd::close(GATE_FD);
}

/// Words of memory shared between processes (a `MAP_SHARED` mapping of a
/// file, normally in `/dev/shm`), used as atomics: the cross-process task
/// queue of the process model. Each process maps the same file.
pub struct SharedWords {
    ptr: std::ptr::NonNull<std::sync::atomic::AtomicU64>,
    words: usize,
}

// SAFETY: the mapping is only ever accessed through `AtomicU64`, which is
// Sync; the pointer stays valid until Drop unmaps it.
unsafe impl Send for SharedWords {}
// SAFETY: as above.
unsafe impl Sync for SharedWords {}

impl SharedWords {
    /// Map the first `words` u64 words of `file` (which must be at least
    /// that long), shared with every other process mapping it.
    pub fn map(file: &std::fs::File, words: usize) -> io::Result<SharedWords> {
        let len = std::num::NonZeroUsize::new(words.max(1) * 8).expect("non-zero");
        // SAFETY: a fresh mapping chosen by the kernel (no address hint), of
        // a file we hold open; nothing else in this process aliases it.
        let p = unsafe {
            nix::sys::mman::mmap(
                None,
                len,
                nix::sys::mman::ProtFlags::PROT_READ | nix::sys::mman::ProtFlags::PROT_WRITE,
                nix::sys::mman::MapFlags::MAP_SHARED,
                file,
                0,
            )
        }
        .map_err(io::Error::from)?;
        Ok(SharedWords {
            ptr: p.cast(),
            words: words.max(1),
        })
    }

    /// Word `i` as an atomic. Panics past the mapped words.
    pub fn word(&self, i: usize) -> &std::sync::atomic::AtomicU64 {
        assert!(i < self.words, "shared word {i} of {}", self.words);
        // SAFETY: in bounds (checked above), 8-byte aligned (page-aligned
        // base), valid for the lifetime of `self`, and only accessed
        // atomically by every process that maps it.
        unsafe { &*self.ptr.as_ptr().add(i) }
    }
}

impl Drop for SharedWords {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region `map` created; no reference
        // from `word` can outlive `self`.
        let _ = unsafe { nix::sys::mman::munmap(self.ptr.cast(), self.words * 8) };
    }
}
