//! Execute's errors: [`ExecError`], why a sample could not be taken
//! (recorded as the failed sample's reason, [`ExecError::reason`]) or why
//! a worker process gave up (sent to smtlab as its reason). `smtlab pin`'s
//! own errors are in `pin`; a server's or DSM point's parameters are
//! refused when the run is planned (`smtlab_plan::PlanError`).

use std::io;
use std::path::PathBuf;

use smtlab_chat::load::ChatLoadError;
use smtlab_web::load::probe::ProbeError;
use smtlab_web::load::LoadError;
use smtlab_workloads::WorkloadError;

use crate::pin::LibraryError;

/// Why a sample could not be taken, or a worker process gave up. A
/// variant with a `source` reads as "doing what" and its source says why
/// (joined by [`ExecError::reason`]); the others say it all themselves.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// A system call starting a child or its pipes failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Errno(#[from] nix::errno::Errno),
    /// `--cmd`'s pinning library could not be installed.
    #[error(transparent)]
    PinLibrary(#[from] LibraryError),

    // Servers (`server`, `chat_sample`).
    #[error("writing the file set into {}", dir.display())]
    WriteFileSet { dir: PathBuf, source: io::Error },
    /// nginx or ngircd is not installed; `reason` says how to get it.
    #[error("{reason}")]
    ServerMissing { reason: &'static str },
    #[error("a directory for {server}'s configuration")]
    ConfigDir {
        server: &'static str,
        source: io::Error,
    },
    #[error("finding a free port for {server}")]
    FreePort {
        server: &'static str,
        source: io::Error,
    },
    #[error("writing {}", path.display())]
    WriteConfig { path: PathBuf, source: io::Error },
    #[error("writing ngircd's configuration")]
    WriteNgircdConfig { source: io::Error },
    #[error("cannot start the {server} server")]
    ServerStart { server: String, source: io::Error },
    /// Its process group could not be named to the watchdog.
    #[error("cannot start the {server} server: {io}")]
    ServerUnwatched { server: String, io: io::Error },
    #[error("cannot start a thread to wait for the server: {io}")]
    ServerWaiter { io: io::Error },
    /// `what`: `output` or `errors`.
    #[error("cannot start a thread to read the server's {what}: {io}")]
    ServerReader { what: &'static str, io: io::Error },
    /// `what`: `accepted connections` or `answered a request`; `end`: how
    /// it ended (`exit code 1`, `killed by SIGSEGV`).
    #[error("the {server} server ended before it {what} ({end})")]
    ServerEnded {
        server: String,
        what: &'static str,
        end: String,
    },
    #[error("the {server} server's first line is not its address: {line}")]
    NotAnAddress { server: String, line: String },
    #[error("the {server} server did not accept connections within {secs} s")]
    NotListening { server: String, secs: f64 },
    #[error("the {server} server did not accept connections within {secs} s ({why})")]
    NotAccepting {
        server: String,
        secs: f64,
        why: ProbeError,
    },
    #[error(
        "the {server} server accepted connections but answered no request within {secs} s (GET \
         {path}; last try: {why})"
    )]
    NotAnswering {
        server: String,
        secs: f64,
        path: String,
        why: ProbeError,
    },
    /// A server that never became ready and wrote to stderr: what it
    /// wrote (lines joined by ` | `), then why.
    #[error("{stderr}")]
    ServerSaid {
        stderr: String,
        source: Box<ExecError>,
    },
    #[error("cannot start the load generator's thread: {io}")]
    LoadThread { io: io::Error },
    // The load generator's own failures: a failed sample's reason says
    // `load generator: ` and one of these.
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    ChatLoad(#[from] ChatLoadError),
    #[error("the load generator's thread ended without a report")]
    LoadEndedWithoutReport,

    // User commands (`command`).
    #[error("--cmd: cannot start the command: {io}")]
    CommandStart { io: io::Error },
    #[error("cannot start a thread to read rank {rank}'s output: {io}")]
    RankReader { rank: usize, io: io::Error },
    #[error("cannot start a thread to wait for rank {rank}: {io}")]
    RankWaiter { rank: usize, io: io::Error },

    // Built-in workloads: the parent (`builtin`) and a worker (`worker`).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("smtlab closed the control pipe")]
    ControlPipeClosed,
    #[error("reading the worker spec")]
    WorkerSpec { source: serde_json::Error },
    #[error("unknown workload `{name}`")]
    UnknownWorkload { name: String },
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    #[error("opening the task queue {}", path.display())]
    OpenQueue { path: PathBuf, source: io::Error },
    #[error("starting a worker thread")]
    WorkerThread { source: io::Error },
    #[error("pinning worker {worker} to CPU {cpu}")]
    PinWorker {
        worker: usize,
        cpu: u32,
        source: io::Error,
    },
    /// Workers whose set-up failed, each `worker N: why`.
    #[error("{}", .0.join("; "))]
    WorkerSetup(Vec<String>),
    #[error("expected `go`, got `{line}`")]
    NotGo { line: String },
    #[error("getrusage")]
    Rusage { source: io::Error },
    #[error("a worker thread panicked")]
    WorkerPanicked,
    /// Another worker thread's set-up failed: nobody runs.
    #[error("aborted")]
    Aborted,
}

impl ExecError {
    /// The error and its causes, `: `-separated: a failed sample's reason.
    pub fn reason(&self) -> String {
        let mut line = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            line.push_str(": ");
            line.push_str(&c.to_string());
            cause = c.source();
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_the_error_then_its_causes() {
        let e = ExecError::ServerSaid {
            stderr: "nginx: [emerg] bind() failed".into(),
            source: Box::new(ExecError::ServerEnded {
                server: "nginx".into(),
                what: "accepted connections",
                end: "exit code 1".into(),
            }),
        };
        assert_eq!(
            e.reason(),
            "nginx: [emerg] bind() failed: the nginx server ended before it accepted connections \
             (exit code 1)"
        );
        let e = ExecError::OpenQueue {
            path: "/dev/shm/q".into(),
            source: io::Error::from_raw_os_error(2),
        };
        assert_eq!(
            e.reason(),
            "opening the task queue /dev/shm/q: No such file or directory (os error 2)"
        );
    }
}
