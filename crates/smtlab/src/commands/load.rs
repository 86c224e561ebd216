//! `smtlab load http URL`: the HTTP load generator against any server —
//! closed loop (`--connections`, keep-alive or `--new-connection`) or open
//! loop (`--rate`, latencies from each request's intended send time), the
//! SPECweb96 mix or a URL list, bodies verified, on CPUs the server does
//! not use. Parsing and wiring only: the work is
//! `smtlab_web::load::run`, the CPU choice
//! `smtlab_serving::client_cpus::choose`.
//!
//! Exit 0 when the run has a result (some request succeeded, every body
//! verified; the errors it counted are in the output), 3 when it has none
//! (no request succeeded, or a body differed: the output is printed and
//! one line on stderr says why, as `run` does for a point without a
//! successful sample), 2 for bad input (one line naming the flag), 1 when
//! the server cannot be reached at all (one line).

use std::io::IsTerminal;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};
use serde::Serialize;
use smtlab_serving::client_cpus::ClientCpus;
use smtlab_types::CpuSet;
use smtlab_web::fileset::{FileSet, DEFAULT_DIRS};
use smtlab_web::load::{
    self, LoadConfig, LoadError, LoadReport, Urls, CLIENT_BOUND_SHARE, MAX_CONNECTIONS, MAX_RATE,
    MAX_THREADS,
};

use super::client_side::{
    choose_cpus, error_counts, exit_status, latency_line, progress, while_ticking,
};
use crate::exit::usage;
use crate::flags;
use crate::output;

/// Defaults: wrk's connections, duration and timeout; a warm-up second.
const DEFAULT_CONNECTIONS: usize = 10;
const DEFAULT_DURATION: f64 = 10.0;
const DEFAULT_WARMUP: f64 = 1.0;
const DEFAULT_TIMEOUT: f64 = 2.0;
const DEFAULT_SEED: u64 = 1;
/// File descriptors kept free beside the connections (stdio, epoll
/// instances, the probe).
const SPARE_FDS: u64 = 64;

#[derive(Args, Debug)]
pub struct LoadArgs {
    #[command(subcommand)]
    pub protocol: Protocol,
}

#[derive(Subcommand, Debug)]
pub enum Protocol {
    /// Load an HTTP/1.1 server: requests/s, Mbit/s, latency percentiles,
    /// errors by kind, bodies verified
    Http(HttpArgs),
    /// Load an IRC server VolanoMark's way: rooms of users, each message
    /// delivered to every member, messages/s, delivery checked
    Chat(super::load_chat::ChatLoadArgs),
}

#[derive(Args, Debug)]
#[command(after_help = "\
Closed loop (default): every connection has one request outstanding and sends the next as \
soon as the response is in; latency runs from the send (with --new-connection, from the \
connect). Open loop (--rate R): R requests/s in all at fixed intended times; each latency \
runs from its intended time, so a server stall counts for every request queued behind it \
(no coordinated omission); requests that found every connection busy are `late sends`.

URLs: by default the SPECweb96 mix over the file set of --files SIZE (the server must serve \
that set, as `smtlab serve web` does), every body checked byte for byte; a URL with a path \
asks for that path only; --urls FILE asks for the paths in FILE (one a line) in turn.

CPUs: with --cpus, those. Otherwise, when the server runs on this machine, smtlab finds it \
(the process listening on the URL's port) and runs on the CPUs it does not use; when none \
is left it runs unpinned and says so. When the client's CPUs were 90% busy or more, it was \
the bottleneck, not the server, and the output says so.

Examples:
  smtlab load http http://127.0.0.1:8080/ --connections 50 --duration 10s
  smtlab load http http://127.0.0.1:8080/ --rate 2000 --connections 100 --json
  smtlab load http http://127.0.0.1:8080/dir00000/class1_0 --new-connection --cpus 1")]
pub struct HttpArgs {
    /// The server: http://HOST:PORT/ (the mix or --urls) or
    /// http://HOST:PORT/PATH (that path only)
    #[arg(value_name = "URL", value_parser = flags::parsed::<UrlArg>)]
    pub url: UrlArg,

    /// Open connections [default: 10, at least one per thread]
    #[arg(long, value_name = "C",
          value_parser = flags::count("--connections", "a number of connections", 1, MAX_CONNECTIONS))]
    pub connections: Option<usize>,

    /// Client threads, each an event loop over its share of the
    /// connections [default: one per client CPU, else 1]
    #[arg(long, value_name = "T",
          value_parser = flags::count("--threads", "a number of client threads", 1, MAX_THREADS))]
    pub threads: Option<usize>,

    /// Open loop: requests per second in all (default: closed loop)
    #[arg(long, value_name = "R", value_parser = flags::parsed::<RateArg>)]
    pub rate: Option<RateArg>,

    /// The measured window: e.g. 10s, 1m [default: 10s]
    #[arg(long, value_name = "D", value_parser = flags::seconds("--duration"))]
    pub duration: Option<f64>,

    /// Load before the window, not recorded: e.g. 1s, 0s [default: 1s]
    #[arg(long, value_name = "D", allow_hyphen_values = true,
          value_parser = flags::parsed::<WarmupArg>)]
    pub warmup: Option<WarmupArg>,

    /// A new connection for every request (Connection: close)
    #[arg(long)]
    pub new_connection: bool,

    /// Ask for the paths in FILE, one a line (# starts a comment)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["mix", "files"])]
    pub urls: Option<PathBuf>,

    /// The request mix over the file set (the default)
    #[arg(long, value_name = "NAME", value_parser = ["specweb96"])]
    pub mix: Option<String>,

    /// The file set's size, as the server was given it: e.g. 5MB, 50MB
    /// [default: 10 directories, about 51 MB]
    #[arg(long, value_name = "SIZE", value_parser = flags::file_set)]
    pub files: Option<FileSet>,

    /// Do not check the bodies
    #[arg(long)]
    pub no_verify: bool,

    /// Run the client threads on these CPUs (thread k on the k-th,
    /// wrapping): a list such as 1 or 2-3 [default: the CPUs the server
    /// does not use]
    #[arg(long, value_name = "LIST", value_parser = flags::cpus)]
    pub cpus: Option<CpuSet>,

    /// The seed of the request mix [default: 1]
    #[arg(long, value_name = "S", value_parser = flags::whole::<u64>("--seed", 0, u64::MAX))]
    pub seed: Option<u64>,

    /// A request without a whole response after this is a timeout: e.g.
    /// 2s, 500ms [default: 2s]
    #[arg(long, value_name = "D", value_parser = flags::seconds("--timeout"))]
    pub timeout: Option<f64>,

    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

/// `URL`: `http://HOST[:PORT][/PATH]`. Hand-parsed rather than with a URL
/// crate: only this one shape is taken (no userinfo, no other scheme), and
/// the host is resolved by the system anyway.
#[derive(Debug, Clone)]
pub struct UrlArg {
    text: String,
    /// `HOST:PORT` as written (the Host header).
    authority: String,
    host: String,
    port: u16,
    /// `None` for `/` (or no path): the mix or --urls.
    path: Option<String>,
}

impl FromStr for UrlArg {
    type Err = String;
    fn from_str(s: &str) -> Result<UrlArg, String> {
        let text = s.trim();
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("https://") {
            return Err(format!(
                "URL {text}: https is not supported; smtlab load speaks plain HTTP/1.1 \
                 (http://HOST:PORT/)"
            ));
        }
        let bad = |why: &str| {
            format!("URL {text}: {why}; expected http://HOST:PORT/ or http://HOST:PORT/PATH")
        };
        let rest = lower
            .starts_with("http://")
            .then(|| &text["http://".len()..])
            .ok_or_else(|| bad("not an http:// URL"))?;
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if !path.starts_with('/') || path.contains('#') {
            return Err(bad("the path must start with / and have no fragment"));
        }
        if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("the path has a space or a control character"));
        }
        if authority.contains('@') {
            return Err(bad("user names and passwords are not supported"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
            (h, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| bad("the port must be a number from 1 to 65535"))?,
            None => 80,
        };
        Ok(UrlArg {
            text: text.to_string(),
            authority: authority.to_string(),
            host: host.to_string(),
            port,
            path: (path != "/").then(|| path.to_string()),
        })
    }
}

/// `--rate R`: requests per second, above 0.
#[derive(Debug, Clone, Copy)]
pub struct RateArg(f64);

impl FromStr for RateArg {
    type Err = String;
    fn from_str(s: &str) -> Result<RateArg, String> {
        match s.trim().parse::<f64>() {
            Ok(r) if r.is_finite() && r > 0.0 && r <= MAX_RATE => Ok(RateArg(r)),
            _ => Err(format!(
                "--rate {s}: expected requests per second, a number above 0 (such as 500 or \
                 2.5), at most {MAX_RATE:e}"
            )),
        }
    }
}

/// `--warmup D`: like `--duration`, but zero allowed.
#[derive(Debug, Clone, Copy)]
pub struct WarmupArg(f64);

impl FromStr for WarmupArg {
    type Err = String;
    fn from_str(s: &str) -> Result<WarmupArg, String> {
        let t = s.trim();
        let range = "expected a duration from 0 to 30 days, such as 0s, 500ms or 2s";
        if t.parse::<f64>().is_ok_and(|v| v == 0.0) {
            return Ok(WarmupArg(0.0));
        }
        if t.starts_with('-') {
            return Err(format!("--warmup {s}: a negative duration; {range}"));
        }
        let d = humantime::parse_duration(t).map_err(|e| format!("--warmup {s}: {e}; {range}"))?;
        if d.as_secs_f64() > flags::MAX_SECONDS {
            return Err(format!("--warmup {s}: at most 30 days; {range}"));
        }
        Ok(WarmupArg(d.as_secs_f64()))
    }
}

pub fn run(a: LoadArgs) -> anyhow::Result<i32> {
    match a.protocol {
        Protocol::Http(h) => http(h),
        Protocol::Chat(c) => super::load_chat::chat(c),
    }
}

/// What `--json` prints: the report and the client's CPUs.
#[derive(Serialize)]
struct JsonOut<'a> {
    url: &'a str,
    #[serde(flatten)]
    report: &'a LoadReport,
    client_cpus: Vec<u32>,
    client_cpus_reason: String,
    /// Set when the client was the bottleneck.
    bottleneck: Option<String>,
}

fn http(a: HttpArgs) -> anyhow::Result<i32> {
    let url = &a.url;
    let urls = urls(&a)?;
    let target = resolve(url)?;

    let chosen = choose_cpus(target, a.cpus.as_ref())?;
    let cpus = chosen.cpus();

    let threads = match (a.threads, a.connections) {
        (Some(t), _) => t,
        (None, Some(c)) => cpus.len().clamp(1, c),
        (None, None) => cpus.len().max(1),
    };
    let connections = a.connections.unwrap_or(DEFAULT_CONNECTIONS.max(threads));
    if threads > connections {
        return Err(usage(format!(
            "--threads {threads}: more client threads than --connections {connections}; every \
             thread needs at least one connection"
        )));
    }
    enough_fds(connections)?;

    let config = LoadConfig {
        target,
        host: url.authority.clone(),
        urls,
        connections,
        keep_alive: !a.new_connection,
        rate: a.rate.map(|r| r.0),
        duration: Duration::from_secs_f64(a.duration.unwrap_or(DEFAULT_DURATION)),
        warmup: Duration::from_secs_f64(a.warmup.map_or(DEFAULT_WARMUP, |w| w.0)),
        threads,
        cpus: cpus.clone(),
        verify: !a.no_verify,
        seed: a.seed.unwrap_or(DEFAULT_SEED),
        request_timeout: Duration::from_secs_f64(a.timeout.unwrap_or(DEFAULT_TIMEOUT)),
    };
    let quiet = a.json || !std::io::stderr().is_terminal();
    let report = run_with_progress(&config, quiet).map_err(|e| match e {
        LoadError::Unreachable { .. } => anyhow!("{}: {e}", url.text),
        LoadError::Affinity { .. } | LoadError::Io { .. } | LoadError::Panicked => {
            anyhow!(e)
        }
        // Bounds the flags already checked; anything left is bad input.
        other => usage(other),
    })?;

    let bottleneck = report.client_bound.then(|| bottleneck(&report, &config));
    let text = if a.json {
        serde_json::to_string_pretty(&JsonOut {
            url: &url.text,
            report: &report,
            client_cpus: cpus,
            client_cpus_reason: chosen.to_string(),
            bottleneck,
        })? + "\n"
    } else {
        summary(url, &config, &report, &chosen, bottleneck.as_deref())
    };
    output::print(&text)?;
    Ok(exit_status(&report.failure()))
}

/// The requests to make: `--urls FILE`, the URL's own path, or the mix.
fn urls(a: &HttpArgs) -> anyhow::Result<Urls> {
    if let Some(path) = &a.url.path {
        if a.urls.is_some() || a.mix.is_some() || a.files.is_some() {
            return Err(usage(format!(
                "URL {}: a URL with a path asks for that path only; give http://HOST:PORT/ \
                 with --urls, --mix or --files",
                a.url.text
            )));
        }
        return Ok(Urls::List(vec![path.clone()]));
    }
    if let Some(file) = &a.urls {
        let text = std::fs::read_to_string(file)
            .map_err(|e| usage(format!("--urls {}: {e}", file.display())))?;
        let mut paths = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let p = line.trim();
            if p.is_empty() || p.starts_with('#') {
                continue;
            }
            if !p.starts_with('/') || p.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(usage(format!(
                    "--urls {}: line {}: {p:?} is not a path such as /index.html",
                    file.display(),
                    i + 1
                )));
            }
            paths.push(p.to_string());
        }
        if paths.is_empty() {
            return Err(usage(format!(
                "--urls {}: no path in the file (one a line, such as /index.html)",
                file.display()
            )));
        }
        return Ok(Urls::List(paths));
    }
    let set = match &a.files {
        Some(f) => f.clone(),
        None => FileSet::with_dirs(DEFAULT_DIRS).context("the default file set")?,
    };
    Ok(Urls::Mix(set))
}

/// The URL's address. With several (a name with IPv6 and IPv4
/// addresses), the first that takes a connection.
fn resolve(url: &UrlArg) -> anyhow::Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| anyhow!("{}: cannot resolve {}: {e}", url.text, url.host))?
        .collect();
    match addrs.as_slice() {
        [] => Err(anyhow!("{}: {} has no address", url.text, url.host)),
        // One address: load::run checks it can connect.
        [one] => Ok(*one),
        many => many
            .iter()
            .copied()
            .find(|a| TcpStream::connect_timeout(a, Duration::from_secs(2)).is_ok())
            .ok_or_else(|| {
                anyhow!(
                    "{}: cannot connect to any address of {}",
                    url.text,
                    url.host
                )
            }),
    }
}

/// Raise the open-file limit if the connections need it.
fn enough_fds(connections: usize) -> anyhow::Result<()> {
    let need = connections as u64 + SPARE_FDS;
    let Some((soft, _)) = smtlab_counters::nofile_limit() else {
        return Ok(());
    };
    if soft >= need {
        return Ok(());
    }
    let raised = smtlab_counters::raise_fd_limit().unwrap_or(soft);
    if raised < need {
        return Err(usage(format!(
            "--connections {connections}: this process may open only {raised} files (ulimit \
             -n); raise the limit or use fewer connections"
        )));
    }
    Ok(())
}

/// Run the load; on a terminal, a bar over the warm-up and the window.
fn run_with_progress(config: &LoadConfig, quiet: bool) -> Result<LoadReport, LoadError> {
    let total = config.warmup + config.duration;
    let bar = progress(
        quiet,
        Some(total.as_millis() as u64),
        "{elapsed_precise} [{bar:30}] {msg}",
    );
    let result = while_ticking(
        || load::run(config),
        |t| {
            bar.set_position((t.min(total)).as_millis() as u64);
            bar.set_message(if t < config.warmup {
                "warm-up"
            } else if t < total {
                "measuring"
            } else {
                "finishing"
            });
        },
    );
    bar.finish_and_clear();
    result.unwrap_or(Err(LoadError::Panicked))
}

/// The line every output carries when the client was the bottleneck.
fn bottleneck(r: &LoadReport, config: &LoadConfig) -> String {
    format!(
        "the load generator, not the server, was the bottleneck: its CPUs were {:.0}% busy \
         (at least {:.0}% means saturated), so {:.0} requests/s is the client's limit; give it \
         more CPUs or threads (now {})",
        r.client_cpu_share * 100.0,
        CLIENT_BOUND_SHARE * 100.0,
        r.requests_per_s,
        count(config.threads, "thread", "threads")
    )
}

/// `n` and the word for one or many.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn summary(
    url: &UrlArg,
    config: &LoadConfig,
    r: &LoadReport,
    cpus: &ClientCpus,
    bottleneck: Option<&str>,
) -> String {
    let what = match &config.urls {
        Urls::Mix(set) => format!(
            "SPECweb96 mix over {} ({:.0} MB)",
            count(set.dirs, "directory", "directories"),
            set.total_bytes() as f64 / 1e6
        ),
        Urls::List(paths) if paths.len() == 1 => paths[0].clone(),
        Urls::List(paths) => format!("{} paths in turn", paths.len()),
    };
    let mode = match config.rate {
        Some(rate) => format!("open loop at {rate} requests/s"),
        None => "closed loop".to_string(),
    };
    let conn = if config.keep_alive {
        "keep-alive"
    } else {
        "a new connection per request"
    };
    let errors = error_counts(&r.errors);
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(format!("smtlab load: {}", url.text));
    line(format!(
        "  {what}; {mode}, {} ({conn}), {}",
        count(config.connections, "connection", "connections"),
        count(config.threads, "thread", "threads")
    ));
    line(format!("  client CPUs   {cpus}"));
    line(format!(
        "  requests      {} in {:.2} s after a {:.1} s warm-up ({} ok)",
        r.requests,
        r.seconds,
        config.warmup.as_secs_f64(),
        r.ok
    ));
    line(format!(
        "  requests/s    {:.1} successful (errors: {errors})",
        r.requests_per_s
    ));
    line(format!("  Mbit/s        {:.2}", r.mbit_per_s));
    line(latency_line(&r.latency_us));
    if config.rate.is_some() {
        line(format!(
            "  late sends    {} (due while every connection was busy; their latency counts \
             from when they were due)",
            r.late_sends
        ));
    }
    line(format!(
        "  client CPU    {:.2} s, {:.0}% of its CPUs",
        r.client_cpu_s,
        r.client_cpu_share * 100.0
    ));
    if let Some(b) = bottleneck {
        line(format!("  BOTTLENECK: {b}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_into_host_port_and_path() {
        let u: UrlArg = "http://127.0.0.1:8080/".parse().unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.clone()),
            ("127.0.0.1", 8080, None)
        );
        assert_eq!(u.authority, "127.0.0.1:8080");
        let u: UrlArg = "http://localhost/dir00000/class0_0".parse().unwrap();
        assert_eq!(u.port, 80);
        assert_eq!(u.path.as_deref(), Some("/dir00000/class0_0"));
        let u: UrlArg = "HTTP://[::1]:81".parse().unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 81));
        let e = "https://example.com/".parse::<UrlArg>().unwrap_err();
        assert!(e.contains("https is not supported"), "{e}");
        for bad in [
            "ftp://x/",
            "http://",
            "http://h:0/",
            "http://h:99999/",
            "http://u@h/",
            "http://[::1/",
        ] {
            let e = bad.parse::<UrlArg>().unwrap_err();
            assert!(e.starts_with(&format!("URL {bad}: ")), "{e}");
        }
    }

    #[test]
    fn flags_name_themselves_when_refused() {
        for (e, flag) in [
            ("0".parse::<RateArg>().unwrap_err(), "--rate 0: "),
            ("nan".parse::<RateArg>().unwrap_err(), "--rate nan: "),
            ("inf".parse::<RateArg>().unwrap_err(), "--rate inf: "),
            ("-5".parse::<RateArg>().unwrap_err(), "--rate -5: "),
            ("x".parse::<WarmupArg>().unwrap_err(), "--warmup x: "),
        ] {
            assert!(e.starts_with(flag), "{e}");
        }
        assert_eq!("0".parse::<WarmupArg>().unwrap().0, 0.0);
        assert_eq!("0s".parse::<WarmupArg>().unwrap().0, 0.0);
        assert_eq!("1.5".parse::<RateArg>().unwrap().0, 1.5);
    }
}
