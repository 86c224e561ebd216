//! `smtlab serve web --model M --threads N --listen ADDR [--root DIR]
//! [--files SIZE] [--cpus LIST] [--param helpers=K] [--request-timeout D]`:
//! one of the web server's architectures in the foreground, for curl, wrk,
//! ab or a browser — and for `smtlab run -w web`, which starts it as a
//! child and reads its lines. `smtlab serve chat --model M --threads N
//! --listen ADDR [--cpus LIST] [--send-queue SIZE] [--max-connections N]`:
//! the IRC chat server likewise, for IRC clients and load generators.
//!
//! The contract with those readers: the first line on stdout, flushed as
//! soon as the server accepts connections, is exactly
//! `listening on http://IP:PORT/ model=M workers=N root=DIR` (web) or
//! `listening on irc://IP:PORT/ model=M workers=N nofile=L` (chat); on
//! SIGINT or SIGTERM the server stops (listener closed, workers ended and
//! reaped, a generated root removed), then one last line `stats: {the
//! server's statistics as JSON}`, and exit 0. Bad input is one line naming
//! the flag, exit 2.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use smtlab_chat::server::{self as chat, ChatConfig};
use smtlab_execute::watchdog::WatchedDir;
use smtlab_sys as sys;
use smtlab_types::{CpuSet, ServerKind, MAX_WORKERS};
use smtlab_web::fileset::{parse_size, FileSet, DEFAULT_DIRS};
use smtlab_web::params::WebParams;
use smtlab_web::server::{self as web, Model, ServerConfig};

use crate::exit::usage;
use crate::flags;

/// How often the foreground loop looks at the SIGINT/SIGTERM flag.
const POLL: Duration = Duration::from_millis(50);

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(subcommand)]
    pub server: Served,
}

#[derive(Subcommand, Debug)]
pub enum Served {
    /// The static HTTP server (GET and HEAD of files under a root) in one
    /// of four architectures
    Web(WebArgs),
    /// The IRC chat server (a subset of RFC 2812) in one of three models
    Chat(ChatArgs),
}

#[derive(Args, Debug)]
#[command(after_help = "\
Models: thread2 (a reader and a writer thread per connection, a queue between them: \
VolanoMark's server), thread (one thread per connection, writing to the others' sockets under \
a per-connection lock), event (N epoll loops, non-blocking sockets, a buffer per connection).

IRC served: NICK, USER, JOIN, PART, PRIVMSG and NOTICE to channels and users, NAMES, WHO, \
MODE (read only), PING/PONG, QUIT, the welcome (001-005, 422) and the usual error numerics. \
A client whose line fills someone's queue past half of --send-queue is not read until that \
queue is down to a quarter (back-pressure: a burst waits in its sender's socket, and a client \
who reads is never disconnected for it). A client that does not read at all holds its senders \
back at most 2 s, and is disconnected once --send-queue bytes wait for it (SendQ exceeded). \
Every client the server closes gets an ERROR line saying why, last.

The first line on stdout, once the server accepts connections, is
  listening on irc://IP:PORT/ model=M workers=N nofile=L
(L: the open-file limit, raised to the hard limit; each connection takes one). Ctrl-C or \
SIGTERM stops the server cleanly: every connection closed, every thread joined; a last line \
`stats: {...}` gives its counters as JSON, and the exit status is 0.

Examples:
  smtlab serve chat --model event --threads 1 --listen 127.0.0.1:6667
  smtlab serve chat --model thread2 --threads 2 --listen 0.0.0.0:6667 --cpus 0-1")]
pub struct ChatArgs {
    /// The model: thread2, thread or event
    #[arg(long, value_name = "M", value_parser = flags::parsed::<ChatModelArg>)]
    pub model: ChatModelArg,

    /// Workers: event loops (event); for thread2 and thread, the number of
    /// CPUs of --cpus the threads share
    #[arg(long, value_name = "N",
          value_parser = flags::count("--threads", "a number of workers", 1, MAX_WORKERS))]
    pub threads: usize,

    /// The address to listen on, IP:PORT (port 0: the kernel picks one,
    /// shown on the first line)
    #[arg(long, value_name = "ADDR", value_parser = flags::parsed::<ListenArg>)]
    pub listen: ListenArg,

    /// Run on these CPUs only (event: loop k on the k-th, wrapping around)
    #[arg(long, value_name = "LIST", value_parser = flags::cpus)]
    pub cpus: Option<CpuSet>,

    /// Bytes that may wait for one client before it is disconnected, e.g.
    /// 64KiB [default: 64KiB]
    #[arg(long, value_name = "SIZE", value_parser = flags::parsed::<SendQueueArg>)]
    pub send_queue: Option<SendQueueArg>,

    /// Open connections at most; past it a new one is refused with ERROR
    /// [default: 100000]
    #[arg(long, value_name = "N",
          value_parser = flags::count("--max-connections", "a number", 1, MAX_CONNECTIONS))]
    pub max_connections: Option<usize>,
}

/// `--model M` of the chat server.
#[derive(Debug, Clone, Copy)]
pub struct ChatModelArg(chat::Model);

impl FromStr for ChatModelArg {
    type Err = String;
    fn from_str(s: &str) -> Result<ChatModelArg, String> {
        s.trim()
            .parse()
            .map(ChatModelArg)
            .map_err(|e| format!("--model {s}: {e}"))
    }
}

/// The largest `--send-queue`: 1 GiB.
const MAX_SEND_QUEUE: u64 = 1 << 30;

/// `--send-queue SIZE`: one line (512 bytes) to 1 GiB.
#[derive(Debug, Clone, Copy)]
pub struct SendQueueArg(usize);

impl FromStr for SendQueueArg {
    type Err = String;
    fn from_str(s: &str) -> Result<SendQueueArg, String> {
        match parse_size(s) {
            Some(b) if (chat::irc::MAX_LINE as u64..=MAX_SEND_QUEUE).contains(&b) => {
                Ok(SendQueueArg(b as usize))
            }
            _ => Err(format!(
                "--send-queue {s}: expected a size from 512 bytes (one IRC line) to 1GiB, such \
                 as 64KiB"
            )),
        }
    }
}

/// The most `--max-connections`.
const MAX_CONNECTIONS: usize = 1_000_000;

#[derive(Args, Debug)]
#[command(after_help = "\
Architectures: process (N forked worker processes, each serving one connection at a time: \
Apache prefork), thread (N threads of one process, likewise), event (N epoll loops), \
staged (accept, parse, file and send stages with queues between them).

The first line on stdout, once the server accepts connections, is
  listening on http://IP:PORT/ model=M workers=N root=DIR
(with the real port when ADDR's port is 0). Ctrl-C or SIGTERM stops the server cleanly: \
every worker ended and reaped, a generated root removed; a last line `stats: {...}` gives \
its counters as JSON, and the exit status is 0.

Without --root, the SPECweb96-like file set (--files SIZE, default about 51 MB) is written \
to a temporary directory removed when the server stops; with --root DIR and --files SIZE \
it is written into DIR (kept, and not written again next time); with --root DIR alone, DIR \
is served as it is.

A connection that has not sent a whole request head within --request-timeout (also the \
longest a keep-alive connection may stay idle) gets 408 and is closed; with the blocking \
models (process, thread) such a client holds one worker that long, as with Apache.

Examples:
  smtlab serve web --model thread --threads 2 --listen 127.0.0.1:8080
  smtlab serve web --model process --threads 4 --listen 0.0.0.0:8080 --root /srv/web --files 500MB
  smtlab serve web --model event --threads 1 --listen 127.0.0.1:0 --cpus 1 --param helpers=2")]
pub struct WebArgs {
    /// The architecture: process, thread, event or staged
    #[arg(long, value_name = "M", value_parser = flags::parsed::<ModelArg>)]
    pub model: ModelArg,

    /// Workers: processes, threads or event loops (for staged, the
    /// threads of each stage)
    #[arg(long, value_name = "N",
          value_parser = flags::count("--threads", "a number of workers", 1, MAX_WORKERS))]
    pub threads: usize,

    /// The address to listen on, IP:PORT (port 0: the kernel picks one,
    /// shown on the first line)
    #[arg(long, value_name = "ADDR", value_parser = flags::parsed::<ListenArg>)]
    pub listen: ListenArg,

    /// Serve this directory (default: a generated file set in a temporary
    /// directory)
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// The size of the SPECweb96-like file set to write, e.g. 5MB, 50MB,
    /// 500MB (whole directories of about 5.1 MB)
    #[arg(long, value_name = "SIZE", value_parser = flags::file_set)]
    pub files: Option<FileSet>,

    /// Run on these CPUs only, worker k on the k-th of the list (wrapping
    /// around): a CPU list such as 0 or 0,2-3
    #[arg(long, value_name = "LIST", value_parser = flags::cpus)]
    pub cpus: Option<CpuSet>,

    /// helpers=K: the event model's helper threads for opening and reading
    /// files (Flash's AMPED)
    #[arg(long, value_name = "KEY=VALUE", value_parser = flags::param)]
    pub param: Vec<(String, String)>,

    /// Longest wait for a whole request head, and longest idle keep-alive
    /// connection: e.g. 1s, 500ms [default: 5s]
    #[arg(long, value_name = "DURATION", value_parser = flags::seconds("--request-timeout"))]
    pub request_timeout: Option<f64>,
}

/// `--model M`.
#[derive(Debug, Clone, Copy)]
pub struct ModelArg(Model);

impl FromStr for ModelArg {
    type Err = String;
    fn from_str(s: &str) -> Result<ModelArg, String> {
        s.trim()
            .parse()
            .map(ModelArg)
            .map_err(|e| format!("--model {s}: {e}"))
    }
}

/// `--listen ADDR`.
#[derive(Debug, Clone, Copy)]
pub struct ListenArg(SocketAddr);

impl FromStr for ListenArg {
    type Err = String;
    fn from_str(s: &str) -> Result<ListenArg, String> {
        s.trim().parse().map(ListenArg).map_err(|_| {
            format!(
                "--listen {s}: expected IP:PORT, such as 127.0.0.1:8080, 0.0.0.0:0 or [::1]:8080"
            )
        })
    }
}

pub fn run(a: ServeArgs) -> anyhow::Result<i32> {
    match a.server {
        Served::Web(w) => web(w),
        Served::Chat(c) => chat_server(c),
    }
}

fn chat_server(a: ChatArgs) -> anyhow::Result<i32> {
    let model = a.model.0;
    let workers = a.threads;
    if let Some(cpus) = &a.cpus {
        restrict_to(cpus)?;
    }
    let stop = sys::interrupt_flag().context("installing the SIGINT/SIGTERM handler")?;
    // Each connection is a descriptor: lift the soft limit to the hard one
    // (no privilege needed) and say what it is.
    let nofile = smtlab_counters::raise_fd_limit()
        .ok()
        .or_else(|| smtlab_counters::nofile_limit().map(|l| l.0))
        .unwrap_or(0);
    let addr = a.listen.0;
    let listener = TcpListener::bind(addr).map_err(|e| usage(format!("--listen {addr}: {e}")))?;
    let mut config = ChatConfig::new(model, workers);
    config.worker_cpus = a.cpus.map(|c| c.iter().collect()).unwrap_or_default();
    if let Some(q) = a.send_queue {
        config.send_queue = q.0;
    }
    if let Some(m) = a.max_connections {
        config.max_connections = m;
    }
    let server = chat::start(&config, listener)
        .with_context(|| format!("starting the {model} chat server"))?;
    let mut out = io::stdout();
    writeln!(
        out,
        "listening on irc://{}/ model={model} workers={workers} nofile={nofile}",
        server.addr()
    )
    .and_then(|()| out.flush())
    .context("writing to stdout")?;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(POLL);
    }
    let stats = server.stats();
    server.stop().context("stopping the server")?;
    let json = serde_json::to_string(&stats).context("the server's statistics as JSON")?;
    writeln!(out, "stats: {json}")
        .and_then(|()| out.flush())
        .context("writing to stdout")?;
    Ok(0)
}

/// `--param helpers=K`, refused for a model that has no helpers; K is
/// read by the web server's own parameters ([`WebParams`]), as `run -w
/// web --param helpers=K` reads it, so both take the same values.
fn helpers(params: &[(String, String)], model: Model) -> anyhow::Result<usize> {
    let mut helpers = 0;
    for (key, value) in params {
        if key != "helpers" {
            return Err(usage(format!(
                "--param {key}={value}: the web server has one parameter, helpers=K (event model)"
            )));
        }
        if model != Model::Event {
            return Err(usage(format!(
                "--param helpers={value}: only the event model has helper threads, not {model}"
            )));
        }
        let one = BTreeMap::from([(key.clone(), value.clone())]);
        helpers = WebParams::parse(ServerKind::Web, &one, None)
            .map_err(usage)?
            .helpers
            .unwrap_or(0);
    }
    Ok(helpers)
}

/// What a path that is not a directory is, for a message.
fn kind_of(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_file() {
        "a file"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "a special file"
    }
}

/// Restrict this process (and so every worker it makes) to `cpus`.
fn restrict_to(cpus: &CpuSet) -> anyhow::Result<()> {
    let allowed = sys::current_affinity().context("reading this process's CPU affinity")?;
    if let Some(cpu) = cpus.difference(&allowed).first() {
        return Err(usage(format!(
            "--cpus {cpus}: CPU {cpu} is not one this process may run on; allowed: {allowed}"
        )));
    }
    sys::set_affinity(0, cpus).map_err(|e| usage(format!("--cpus {cpus}: {e}")))
}

fn web(a: WebArgs) -> anyhow::Result<i32> {
    let model = a.model.0;
    let workers = a.threads;
    let helpers = helpers(&a.param, model)?;
    if let Some(root) = &a.root {
        // With --files a missing directory is made; anything else there is
        // said as what it is.
        match (std::fs::metadata(root), &a.files) {
            (Ok(m), _) if m.is_dir() => {}
            (Err(e), Some(_)) if e.kind() == io::ErrorKind::NotFound => {}
            (Err(e), None) if e.kind() == io::ErrorKind::NotFound => {
                return Err(usage(format!(
                    "--root {}: no such directory; give an existing directory, or add --files \
                     SIZE to write the file set into it",
                    root.display()
                )))
            }
            (Ok(m), _) => {
                return Err(usage(format!(
                    "--root {}: {}, not a directory; give the directory to serve",
                    root.display(),
                    kind_of(&m)
                )))
            }
            (Err(e), _) => return Err(usage(format!("--root {}: {e}", root.display()))),
        }
    }
    if let Some(cpus) = &a.cpus {
        restrict_to(cpus)?;
    }
    // From here on SIGINT and SIGTERM only set the flag: the loop below
    // stops the server, so workers are reaped and a temporary root removed.
    let stop = sys::interrupt_flag().context("installing the SIGINT/SIGTERM handler")?;
    let addr = a.listen.0;
    let listener = TcpListener::bind(addr).map_err(|e| usage(format!("--listen {addr}: {e}")))?;

    // The document root (a temporary one is removed when `temp` drops,
    // on every path out of this function).
    let mut temp = None;
    let root = match a.root {
        Some(dir) => {
            if let Some(set) = &a.files {
                set.write_to(&dir).map_err(|e| {
                    usage(format!(
                        "--root {}: cannot write the file set: {e}",
                        dir.display()
                    ))
                })?;
            }
            dir
        }
        None => {
            // Named to the watchdog, which removes it if this process is
            // killed before it can.
            let exe = std::env::current_exe().context("locating the smtlab binary")?;
            let dir = WatchedDir::new(&exe, "smtlab-web-")
                .context("creating a temporary document root")?;
            let set = match a.files {
                Some(f) => f,
                None => FileSet::with_dirs(DEFAULT_DIRS).context("the default file set")?,
            };
            set.write_to(dir.path())
                .with_context(|| format!("writing the file set into {}", dir.path().display()))?;
            let path = dir.path().to_path_buf();
            temp = Some(dir);
            path
        }
    };
    let root = root.canonicalize().unwrap_or(root);

    let mut config = ServerConfig::new(model, workers, root.clone());
    config.helpers = helpers;
    config.worker_cpus = a.cpus.map(|c| c.iter().collect()).unwrap_or_default();
    if let Some(s) = a.request_timeout {
        config.request_timeout = Duration::from_secs_f64(s);
    }
    // Started while this process has one thread: the process model forks.
    let server = web::start(&config, listener).map_err(|e| match e.kind() {
        io::ErrorKind::Unsupported => usage(format!("--model {model}: {e}")),
        _ => anyhow::Error::new(e).context(format!("starting the {model} server")),
    })?;

    let mut out = io::stdout();
    writeln!(
        out,
        "listening on http://{}/ model={model} workers={workers} root={}",
        server.addr(),
        root.display()
    )
    .and_then(|()| out.flush())
    .context("writing to stdout")?;

    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(POLL);
    }

    let stats = server.stats();
    server.stop().context("stopping the server")?;
    if let Some(dir) = temp {
        dir.close()
            .context("removing the temporary document root")?;
    }
    let json = serde_json::to_string(&stats).context("the server's statistics as JSON")?;
    writeln!(out, "stats: {json}")
        .and_then(|()| out.flush())
        .context("writing to stdout")?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_decimal_and_binary_units() {
        assert_eq!(parse_size("5MB"), Some(5_000_000));
        assert_eq!(parse_size("500mb"), Some(500_000_000));
        assert_eq!(parse_size("0.5GB"), Some(500_000_000));
        assert_eq!(parse_size("2MiB"), Some(2 * 1024 * 1024));
        assert_eq!(parse_size("1234"), Some(1234));
        assert_eq!(parse_size("5 MB"), Some(5_000_000));
        for bad in ["", "MB", "5XB", "-5MB", "5..1MB", "1e20"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn flags_name_themselves_when_refused() {
        let e = "apache".parse::<ModelArg>().unwrap_err();
        assert!(
            e.starts_with("--model apache: ") && e.contains("process"),
            "{e}"
        );
        let e = "localhost".parse::<ListenArg>().unwrap_err();
        assert!(e.starts_with("--listen localhost: "), "{e}");
    }

    #[test]
    fn chat_flags_name_themselves_when_refused() {
        let e = "volano".parse::<ChatModelArg>().unwrap_err();
        assert!(
            e.starts_with("--model volano: ") && e.contains("thread2"),
            "{e}"
        );
        assert_eq!(
            "thread2".parse::<ChatModelArg>().unwrap().0,
            chat::Model::Thread2
        );
        assert_eq!("64KiB".parse::<SendQueueArg>().unwrap().0, 65_536);
        let e = "100".parse::<SendQueueArg>().unwrap_err();
        assert!(e.starts_with("--send-queue 100: "), "{e}");
        assert!("2GiB".parse::<SendQueueArg>().is_err());
    }

    #[test]
    fn helpers_are_for_the_event_model_only() {
        let p = |v: &str| vec![("helpers".to_string(), v.to_string())];
        assert_eq!(helpers(&p("2"), Model::Event).unwrap(), 2);
        assert!(helpers(&p("2"), Model::Thread).is_err());
        // The web server's own check of helpers=K, word for word as `run
        // -w web --param helpers=K` refuses it.
        for bad in ["x", "1025", "-1"] {
            let e = helpers(&p(bad), Model::Event).unwrap_err().to_string();
            assert_eq!(e, format!("--param helpers={bad}: expected 0 to 1024"));
            let one = BTreeMap::from([("helpers".to_string(), bad.to_string())]);
            let run = WebParams::parse(ServerKind::Web, &one, None).unwrap_err();
            assert_eq!(e, run.to_string());
        }
        assert_eq!(helpers(&p("1024"), Model::Event).unwrap(), 1024);
        assert!(helpers(&[("other".into(), "1".into())], Model::Event).is_err());
        assert_eq!(helpers(&[], Model::Process).unwrap(), 0);
    }
}
