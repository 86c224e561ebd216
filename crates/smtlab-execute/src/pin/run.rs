//! Run a program pinned: start it with the library preloaded (or confined
//! as a whole), forward signals to it, sample `/proc` while it runs, wait
//! for it, read its threads once more before reaping it, and never leave it
//! behind. Uses `library`, `request`, `thread_log` and `outcome`.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::Duration;

use smtlab_sys as sys;
use smtlab_types::cpuset::CpuSet;

use super::interface::{ENV_CPUS, ENV_REPORT, ENV_SKIP};
use super::library::{preload_library, preload_value, LibraryError};
use super::outcome::{assemble, PinOutcome};
use super::request::{PinMode, PinRequest};
use super::thread_log::{parse_thread_log, task_stats, TaskStat, ThreadLogFile};

/// How often `/proc/<pid>/task` is sampled while the program runs.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// Why a program could not be run pinned. [`NotFound`](Self::NotFound) and
/// [`Spawn`](Self::Spawn) are the user's command at fault; the rest are
/// this machine's (each names the step that failed, its I/O error as the
/// source).
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("command not found: {0}")]
    NotFound(String),
    // The error is in the message (not a source): the CLI prints this one
    // line as a usage error.
    #[error("cannot run {program}: {io}")]
    Spawn { program: String, io: io::Error },
    #[error("no command to run")]
    NoCommand,
    #[error("empty CPU list")]
    NoCpus,
    #[error(transparent)]
    Library(#[from] LibraryError),
    #[error("creating {}", .0.display())]
    ThreadLog(PathBuf, #[source] io::Error),
    #[error("preparing the child")]
    Prepare(#[source] io::Error),
    #[error("installing signal handlers")]
    Signals(#[source] io::Error),
    #[error("waiting for the program")]
    Wait(#[source] io::Error),
    #[error("reaping the program")]
    Reap(#[source] io::Error),
}

/// Kills and reaps the child if we bail out early: never leave one behind.
struct ChildGuard(Option<Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Run `req.command` pinned, wait for it (forwarding SIGINT/SIGTERM/SIGHUP/
/// SIGQUIT sent to smtlab), and report where its threads ran. The program's
/// stdin, stdout and stderr are smtlab's.
pub fn run(req: &PinRequest) -> Result<PinOutcome, PinError> {
    let program = req.command.first().ok_or(PinError::NoCommand)?;
    if req.cpus.is_empty() {
        return Err(PinError::NoCpus);
    }
    let set: CpuSet = req.cpus.iter().copied().collect();
    let lib = preload_library()?;
    let dir = lib.parent().expect("library path has a directory");
    let report = ThreadLogFile::create(dir).map_err(|(path, io)| PinError::ThreadLog(path, io))?;

    let mut cmd = Command::new(program);
    cmd.args(&req.command[1..]);
    cmd.env(
        "LD_PRELOAD",
        preload_value(&lib, std::env::var_os("LD_PRELOAD").as_deref()),
    );
    cmd.env(ENV_REPORT, &report.0);
    match req.mode {
        PinMode::Threads => {
            let list: Vec<String> = req.cpus.iter().map(|c| c.to_string()).collect();
            cmd.env(ENV_CPUS, list.join(","));
            cmd.env(ENV_SKIP, format!("{:#x}", req.skip));
            // As likwid-pin: one OpenMP thread per listed CPU unless set.
            if std::env::var_os("OMP_NUM_THREADS").is_none() {
                cmd.env("OMP_NUM_THREADS", req.cpus.len().to_string());
            }
        }
        PinMode::Process => {
            cmd.env_remove(ENV_CPUS);
            cmd.env_remove(ENV_SKIP);
        }
    }
    sys::configure_child(&mut cmd, Some(&set)).map_err(PinError::Prepare)?;

    let forwarding = sys::SignalForwarding::install().map_err(PinError::Signals)?;
    let name = program.to_string_lossy().into_owned();
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(PinError::NotFound(name)),
        Err(e) => {
            return Err(PinError::Spawn {
                program: name,
                io: e,
            })
        }
    };
    let pid = child.id() as i32;
    let mut guard = ChildGuard(Some(child));
    forwarding.set_child(pid);

    let (stop, stopped) = mpsc::channel::<()>();
    let sampler = std::thread::spawn(move || {
        let mut seen: HashMap<i32, TaskStat> = HashMap::new();
        loop {
            for t in task_stats(pid) {
                seen.insert(t.tid, t);
            }
            match stopped.recv_timeout(SAMPLE_EVERY) {
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                _ => break,
            }
        }
        seen
    });

    let waited = sys::wait_exited_keep_zombie(pid);
    forwarding.clear_child();
    let _ = stop.send(());
    let sampled = sampler.join().unwrap_or_default();
    waited.map_err(PinError::Wait)?;
    let after_exit = task_stats(pid);
    let status = guard
        .0
        .take()
        .expect("child present")
        .wait()
        .map_err(PinError::Reap)?;
    drop(forwarding);

    let text = fs::read_to_string(&report.0).unwrap_or_default();
    let lines = parse_thread_log(&text);
    let (exit_code, signal) = match (status.code(), status.signal()) {
        (Some(c), _) => (c, None),
        (None, Some(s)) => (128 + s, Some(s)),
        (None, None) => (1, None),
    };
    Ok(assemble(
        req,
        pid,
        exit_code,
        signal,
        &lines,
        &sampled,
        &after_exit,
    ))
}
