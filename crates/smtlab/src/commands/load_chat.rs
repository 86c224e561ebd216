//! `smtlab load chat ADDR`: the VolanoMark-shaped IRC load generator
//! against any IRC server — `--rooms R --users U --messages M` (U clients
//! per room, each sends M messages, each delivered to the room's other
//! members), closed loop or open loop (`--rate`), on CPUs the server does
//! not use. Parsing and wiring only: the work is
//! `smtlab_chat::load::run`.
//!
//! Exit 0 when every message reached every other member of its room once
//! and in order, 3 when one did not or none was delivered (the output is
//! printed, and one line on stderr says why, as `run` does for a point
//! without a successful sample), 2 for bad input (one line naming the
//! flag), 1 when the server cannot be reached or the clients cannot all
//! register and join (one line).

use std::io::IsTerminal;
use std::net::{SocketAddr, ToSocketAddrs};
use std::str::FromStr;
use std::time::Duration;

use anyhow::anyhow;
use clap::Args;
use serde::Serialize;
use smtlab_chat::load::{self as chatload, ChatLoadConfig, ChatLoadError, ChatLoadReport};
use smtlab_serving::client_cpus::ClientCpus;
use smtlab_types::CpuSet;

use super::client_side::{
    choose_cpus, error_counts, exit_status, latency, latency_line, progress, while_ticking,
};
use crate::exit::usage;
use crate::flags;
use crate::output;

/// VolanoMark's room of 20 users and 100 messages per user.
const DEFAULT_ROOMS: usize = 10;
const DEFAULT_USERS: usize = 20;
const DEFAULT_MESSAGES: usize = 100;

#[derive(Args, Debug)]
#[command(after_help = "\
Every client registers (NICK, USER), joins its room's channel and waits for the others; then \
each sends --messages PRIVMSGs to its channel. Closed loop (default): a client sends its next \
message once its previous --window ones reached every other member of its room. Open loop \
(--rate R): R messages/s in all, spread over the clients, each latency counted from when the \
message was due, so a stalled server cannot hide behind a slowed client.

The score is messages delivered per second: every (message, member) arrival counts once. \
Every arrival is checked: each message must reach each other member of its room exactly \
once, and a sender's messages in order; what did not is counted as lost, duplicates or out \
of order.

Examples:
  smtlab load chat 127.0.0.1:6667
  smtlab load chat 127.0.0.1:6667 --rooms 50 --users 20 --messages 20 --cpus 1
  smtlab load chat irc.example.test:6667 --rooms 1 --users 5 --messages 10 --rate 20 --json")]
pub struct ChatLoadArgs {
    /// The server, HOST:PORT (e.g. 127.0.0.1:6667)
    #[arg(value_name = "ADDR", value_parser = flags::parsed::<AddrArg>)]
    pub addr: AddrArg,

    /// Rooms (channels) [default: 10]
    #[arg(long, value_name = "R", value_parser = flags::whole::<usize>("--rooms", 1, chatload::MAX_CONNECTIONS as u64))]
    pub rooms: Option<usize>,

    /// Clients per room, at least 2 [default: 20]
    #[arg(long, value_name = "U", value_parser = flags::whole::<usize>("--users", 2, chatload::MAX_CONNECTIONS as u64))]
    pub users: Option<usize>,

    /// Messages each client sends [default: 100]
    #[arg(long, value_name = "M", value_parser = flags::whole::<usize>("--messages", 1, 1_000_000_000))]
    pub messages: Option<usize>,

    /// Open loop: messages per second in all
    #[arg(long, value_name = "R", value_parser = flags::parsed::<RateArg>)]
    pub rate: Option<RateArg>,

    /// Closed loop: messages of one sender on their way at once [default: 1]
    #[arg(long, value_name = "W", value_parser = flags::whole::<usize>("--window", 1, 1_000_000))]
    pub window: Option<usize>,

    /// Length of each message's text in bytes [default: 64]
    #[arg(long, value_name = "B", value_parser = flags::whole::<usize>("--message-bytes", 1, 400))]
    pub message_bytes: Option<usize>,

    /// Client threads (whole rooms spread over them) [default: 1]
    #[arg(long, value_name = "T", value_parser = flags::whole::<usize>("--threads", 1, 1024))]
    pub threads: Option<usize>,

    /// Run the clients on these CPUs (default: the CPUs a server on this
    /// machine does not use)
    #[arg(long, value_name = "LIST", value_parser = flags::cpus)]
    pub cpus: Option<CpuSet>,

    /// Longest wait for every client to register and join, e.g. 60s
    /// [default: 60s]
    #[arg(long, value_name = "DURATION", value_parser = flags::seconds("--connect-timeout"))]
    pub connect_timeout: Option<f64>,

    /// A message not at every member this long after it was sent is lost,
    /// e.g. 10s [default: 10s]
    #[arg(long, value_name = "DURATION", value_parser = flags::seconds("--timeout"))]
    pub timeout: Option<f64>,

    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

/// `ADDR`: HOST:PORT, resolved.
#[derive(Debug, Clone)]
pub struct AddrArg {
    text: String,
    addr: SocketAddr,
}

impl FromStr for AddrArg {
    type Err = String;
    fn from_str(s: &str) -> Result<AddrArg, String> {
        let t = s.trim();
        let t = t.strip_prefix("irc://").unwrap_or(t).trim_end_matches('/');
        let addr = t
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| {
                format!("ADDR {s}: expected HOST:PORT of an IRC server, such as 127.0.0.1:6667")
            })?;
        Ok(AddrArg {
            text: t.to_string(),
            addr,
        })
    }
}

/// `--rate R`: messages/s, finite and positive.
#[derive(Debug, Clone, Copy)]
pub struct RateArg(f64);

impl FromStr for RateArg {
    type Err = String;
    fn from_str(s: &str) -> Result<RateArg, String> {
        match s.trim().parse::<f64>() {
            Ok(r) if r.is_finite() && r > 0.0 && r <= 1e9 => Ok(RateArg(r)),
            _ => Err(format!(
                "--rate {s}: expected messages per second, more than 0 and at most 1e9"
            )),
        }
    }
}

/// What `--json` prints.
#[derive(Serialize)]
struct JsonOut<'a> {
    server: &'a str,
    rooms: usize,
    users: usize,
    messages: usize,
    rate: Option<f64>,
    #[serde(flatten)]
    report: &'a ChatLoadReport,
    client_cpus: Vec<u32>,
    client_cpus_reason: String,
}

pub fn chat(a: ChatLoadArgs) -> anyhow::Result<i32> {
    let target = a.addr.addr;
    let chosen = choose_cpus(target, a.cpus.as_ref())?;
    let mut config = ChatLoadConfig::new(
        target,
        a.rooms.unwrap_or(DEFAULT_ROOMS),
        a.users.unwrap_or(DEFAULT_USERS),
        a.messages.unwrap_or(DEFAULT_MESSAGES),
    );
    config.rate = a.rate.map(|r| r.0);
    if let Some(w) = a.window {
        config.window = w;
    }
    if let Some(b) = a.message_bytes {
        config.message_bytes = b;
    }
    config.threads = a.threads.unwrap_or(1);
    config.cpus = chosen.cpus();
    if let Some(s) = a.connect_timeout {
        config.connect_timeout = Duration::from_secs_f64(s);
    }
    if let Some(s) = a.timeout {
        config.timeout = Duration::from_secs_f64(s);
    }
    if config.threads > config.rooms {
        return Err(usage(format!(
            "--threads {}: more client threads than --rooms {}; a room stays on one thread",
            config.threads, config.rooms
        )));
    }
    chatload::check(&config).map_err(usage)?;
    let quiet = a.json || !std::io::stderr().is_terminal();
    let report = run_with_spinner(&config, quiet).map_err(|e| match e {
        ChatLoadError::Invalid(_) => usage(e),
        other => anyhow!("{}: {other}", a.addr.text),
    })?;
    let text = if a.json {
        serde_json::to_string_pretty(&JsonOut {
            server: &a.addr.text,
            rooms: config.rooms,
            users: config.users,
            messages: config.messages,
            rate: config.rate,
            report: &report,
            client_cpus: config.cpus.clone(),
            client_cpus_reason: chosen.to_string(),
        })? + "\n"
    } else {
        summary(&a.addr.text, &config, &report, &chosen)
    };
    output::print(&text)?;
    Ok(exit_status(&report.failure()))
}

/// The run, with a spinner and the elapsed time on a terminal (the run's
/// length is not known ahead: it ends when every message is delivered).
fn run_with_spinner(config: &ChatLoadConfig, quiet: bool) -> Result<ChatLoadReport, ChatLoadError> {
    let bar = progress(quiet, None, "{spinner} {elapsed_precise} {msg}");
    bar.set_message(format!(
        "{} clients in {} rooms, {} messages each",
        config.connections(),
        config.rooms,
        config.messages
    ));
    let result = while_ticking(|| chatload::run(config), |_| bar.tick());
    bar.finish_and_clear();
    result.unwrap_or_else(|| {
        Err(ChatLoadError::Setup(
            "the load generator's thread ended without a report".into(),
        ))
    })
}

fn summary(server: &str, c: &ChatLoadConfig, r: &ChatLoadReport, cpus: &ClientCpus) -> String {
    let mode = match c.rate {
        Some(rate) => format!("open loop at {rate} messages/s"),
        None => format!("closed loop, window {}", c.window),
    };
    let errors = error_counts(&r.errors);
    let k = &r.connect_us;
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(format!("smtlab load chat: {server}"));
    line(format!(
        "  {} rooms x {} users = {} connections, {} messages each ({} bytes); {mode}",
        c.rooms, c.users, r.connections, c.messages, c.message_bytes
    ));
    line(format!("  client CPUs   {cpus}"));
    line(format!(
        "  score         {:.1} messages delivered/s ({} deliveries in {:.2} s; {:.1} sent/s)",
        r.messages_per_s, r.deliveries, r.elapsed_s, r.sent_per_s
    ));
    line(format!(
        "  delivered     {} of {} expected: lost {}, duplicates {}, out of order {}",
        r.deliveries, r.expected_deliveries, r.lost, r.duplicates, r.out_of_order
    ));
    line(latency_line(&r.latency_us));
    line(format!(
        "  connect+join  p50 {}  p99 {}  max {}",
        latency(k.p50),
        latency(k.p99),
        latency(k.max)
    ));
    line(format!("  errors        {errors}"));
    for (why, n) in &r.closed_reasons {
        line(format!("  closed by the server: {n} x {why}"));
    }
    line(format!(
        "  client CPU    {:.2} s, {:.0}% of its CPUs",
        r.client_cpu_s,
        r.client_busy * 100.0
    ));
    line(format!("  bottleneck    {}", r.bottleneck));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_name_themselves_when_refused() {
        let e = "nan".parse::<RateArg>().unwrap_err();
        assert!(e.starts_with("--rate nan: "), "{e}");
        assert!("-1".parse::<RateArg>().is_err());
        let e = "nowhere".parse::<AddrArg>().unwrap_err();
        assert!(e.starts_with("ADDR nowhere: "), "{e}");
        assert_eq!(
            "irc://127.0.0.1:6667/"
                .parse::<AddrArg>()
                .unwrap()
                .addr
                .port(),
            6667
        );
    }
}
