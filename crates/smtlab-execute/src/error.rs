//! Execute's errors: [`ServerParamError`], a server point's `--param` refused
//! when the run is planned (the CLI makes it a usage error, exit 2), and
//! [`ExecError`], why a sample could not be taken (recorded as the failed
//! sample's reason, [`ExecError::reason`]) or why a worker process gave up
//! (sent to smtlab as its reason). `smtlab pin`'s own errors are in `pin`.

use std::io;
use std::path::PathBuf;

use smtlab_chat::load::ChatLoadError;
use smtlab_web::fileset::FileSetError;
use smtlab_web::load::probe::ProbeError;
use smtlab_web::load::LoadError;
use smtlab_workloads::WorkloadError;

use crate::pin::LibraryError;

/// A server point's parameter (or `--client-cpus`) refused; each message
/// names the parameter and its value and says what would be valid.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ServerParamError {
    /// `servers`: the web servers there are. The tables of servers and
    /// parameters live with the code that runs them (`server.rs`,
    /// `chat_sample.rs`), which builds these errors: this file names no
    /// module that uses it.
    #[error("--workload {server}: not a web server; web servers: {}", servers.join(", "))]
    NotAWebServer {
        server: String,
        servers: &'static [&'static str],
    },
    #[error("--workload {server}: not a chat server")]
    NotAChatServer { server: String },
    #[error("--param files={value}: expected a size such as 5MB, 50MB or 500MB")]
    NotASize { value: String },
    /// A size the file set cannot be made of (its error says why).
    #[error("--param files={value}: {error}")]
    FileSet { value: String, error: FileSetError },
    /// A count outside `min..=max` (or not a number).
    #[error("--param {param}={value}: expected {min} to {max}")]
    OutOfRange {
        param: String,
        value: String,
        min: usize,
        max: usize,
    },
    #[error("--param keepalive={value}: expected 0 or 1")]
    KeepAlive { value: String },
    #[error(
        "--param url={value}: expected a path that starts with / (e.g. /dir00000/class1_0, a 1 \
         KB file)"
    )]
    Url { value: String },
    #[error("--param rate={value}: expected messages per second, more than 0 and at most 1e9")]
    Rate { value: String },
    #[error("--client-cpus {value}: expected a CPU list such as 1 or 2-3")]
    ClientCpus { value: String },
    /// A parameter `server` does not take; `takes`: those it does.
    #[error("--param {param}: `{server}` has no such parameter; it takes {}", takes.join(", "))]
    Unknown {
        server: String,
        param: String,
        takes: Vec<&'static str>,
    },
    #[error(
        "--param connections={connections}: expected a multiple of room={room} (rooms of {room} \
         users)"
    )]
    RoomsUneven { connections: usize, room: usize },
    #[error("--param room={room}: at most 1000")]
    RoomTooLarge { room: usize },
}

/// Why a sample could not be taken, or a worker process gave up. A
/// variant with a `source` reads as "doing what" and its source says why
/// (joined by [`ExecError::reason`]); the others say it all themselves.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(transparent)]
    Param(#[from] ServerParamError),
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
    WorkloadParam(#[from] smtlab_workloads::ParamError),
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

    fn kv(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The CLI prints these as usage errors (exit 2), and tests of the
    /// CLI match them: each one, word for word.
    #[test]
    fn server_param_messages_name_the_parameter_and_what_is_valid() {
        use crate::chat_sample::ChatParams;
        use crate::server::ServerParams;
        let web = |pairs: &[(&str, &str)]| ServerParams::parse("web", &kv(pairs)).unwrap_err();
        let chat = |pairs: &[(&str, &str)]| ChatParams::parse("chat", &kv(pairs)).unwrap_err();
        let cases: Vec<(ServerParamError, &str)> = vec![
            (
                ServerParams::parse("apache", &kv(&[])).unwrap_err(),
                "--workload apache: not a web server; web servers: web, nginx",
            ),
            (
                ChatParams::parse("irc", &kv(&[])).unwrap_err(),
                "--workload irc: not a chat server",
            ),
            (
                web(&[("files", "huge")]),
                "--param files=huge: expected a size such as 5MB, 50MB or 500MB",
            ),
            (
                web(&[("connections", "0")]),
                "--param connections=0: expected 1 to 100000",
            ),
            (
                web(&[("keepalive", "maybe")]),
                "--param keepalive=maybe: expected 0 or 1",
            ),
            (
                web(&[("url", "index.html")]),
                "--param url=index.html: expected a path that starts with / (e.g. \
                 /dir00000/class1_0, a 1 KB file)",
            ),
            (
                web(&[("helpers", "2000")]),
                "--param helpers=2000: expected 0 to 1024",
            ),
            (
                web(&[("client_cpus", "x")]),
                "--client-cpus x: expected a CPU list such as 1 or 2-3",
            ),
            (
                web(&[("threads", "2")]),
                "--param threads: `web` has no such parameter; it takes files, connections, \
                 keepalive, url, helpers",
            ),
            (
                ServerParams::parse("nginx", &kv(&[("helpers", "1")])).unwrap_err(),
                "--param helpers: `nginx` has no such parameter; it takes files, connections, \
                 keepalive, url",
            ),
            (chat(&[("room", "1")]), "--param room=1: expected 2 to 1000"),
            (
                chat(&[("rate", "nan")]),
                "--param rate=nan: expected messages per second, more than 0 and at most 1e9",
            ),
            (
                chat(&[("files", "5MB")]),
                "--param files: `chat` has no such parameter; it takes connections, room, \
                 messages, rate",
            ),
            (
                chat(&[("connections", "30")]),
                "--param connections=30: expected a multiple of room=20 (rooms of 20 users)",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want, "{e:?}");
        }
    }
}
