//! The chat load generator behind `smtlab load chat ADDR`: VolanoMark's
//! shape over IRC (RFC 2812), against any IRC server. [`run`] drives a
//! server with a [`ChatLoadConfig`] and returns a [`ChatLoadReport`].
//!
//! R rooms (channels) of U clients each; every client sends M messages to
//! its room, and the server relays each to the room's U - 1 other members
//! (IRC does not echo a message to its sender). The score is the messages
//! delivered per second, counted at the receivers. Either loop:
//!
//! * closed (the default): a sender sends its next message as soon as
//!   fewer than `window` of its messages are still on their way to some
//!   member of its room (the generator holds every receiver, so it knows
//!   without asking the server); latency runs from the send;
//! * open (`rate`): messages at `rate` per second in all, round-robin over
//!   the senders, each with an intended send time it carries in its text;
//!   latency runs from that time, so a server (or a socket) that falls
//!   behind shows its backlog in the latencies (no coordinated omission).
//!
//! Every delivery is checked: exactly once and in order for each (sender,
//! receiver) pair, the channel the receiver's, the text intact. Missing
//! deliveries at the end are `lost`; the run ends when every message has
//! reached every member still connected, or `timeout` after the last send.
//!
//! Nothing is sent before every client of every thread has registered and
//! joined (a barrier), so the measured phase sees full rooms from its
//! first message; set-up is measured apart (`connect_us`).
//!
//! * `client.rs`: one client thread, a mio event loop over whole rooms
//!   (set-up, the barrier, the run);
//! * `connection.rs`: one non-blocking connection and its queues;
//! * `message.rs`: IRC lines out and in, and the measured message's text;
//! * `arrivals.rs`: exactly once and in order, per (receiver, sender);
//! * `window.rs`: the closed loop's messages in flight, per sender;
//! * `schedule.rs`: the open loop's intended send times;
//! * `record.rs`: latencies (HdrHistogram), counts, errors by kind;
//! * `cpu.rs`: the client's own CPU time, and when it was the bottleneck;
//! * `fd_limit.rs`: enough descriptors for one socket per client.
//!
//! Before the run one connection is opened and closed to check that the
//! server is there ([`ChatLoadError::Unreachable`] if not); the server sees
//! it as a client that left before registering.

use std::collections::BTreeMap;
use std::io;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;

pub use smtlab_serving::Latency;

mod arrivals;
mod client;
mod config;
mod connection;
mod error;
mod fd_limit;
mod finish;
mod message;
mod record;
mod schedule;
mod window;

pub use config::{ChatLoadConfig, Hook};
pub use error::ChatLoadError;
use finish::Finish;

use smtlab_serving::cpu;
pub use smtlab_serving::CLIENT_BOUND_SHARE;

/// The most connections (rooms × users) a run opens.
pub const MAX_CONNECTIONS: usize = 100_000;
/// The most members of a room.
pub const MAX_USERS: usize = 1_000;
/// The most (receiver, sender) pairs, rooms × users²: each is tracked in
/// 16 bytes, so this bounds that memory at 160 MB.
pub const MAX_PAIRS: usize = 10_000_000;
/// The most messages per user (sequence numbers are 32-bit).
pub const MAX_MESSAGES: usize = 1_000_000_000;
/// The largest closed-loop window.
pub const MAX_WINDOW: usize = 1_000_000;
/// The most client threads.
pub const MAX_THREADS: usize = 1_024;
/// The highest open-loop rate and connect rate, per second (one per
/// nanosecond: a bound so the schedule's arithmetic holds).
pub const MAX_RATE: f64 = 1e9;
/// The shortest message text: the header that says who sent it, which it
/// is and when its latency starts.
pub const MIN_MESSAGE_BYTES: usize = message::HEADER_BYTES;
/// The longest message text. An IRC line is at most 512 bytes with its CR
/// LF (RFC 2812 section 2.3), and the line the server relays adds the
/// sender's prefix (`:nick!~user@host `, up to ~85 bytes) to `PRIVMSG
/// #channel :`; 380 leaves room for both, so no server truncates a text.
pub const MAX_MESSAGE_BYTES: usize = 380;
/// RFC 2812's nickname length (ngircd's default `MaxNickLength`).
pub const NICK_LEN: usize = 9;
/// The longest channel prefix (channel names stay far below the 50
/// characters of RFC 2812).
pub const MAX_CHANNEL_PREFIX: usize = 16;
/// The longest timeout: 30 days.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);
/// Clients between `connect()` and their `366` at once during set-up,
/// across all threads. Small on purpose: IRC servers listen with short
/// backlogs (ngircd 26: `listen(sock, 10)`, and it accepts one connection
/// per pass of its event loop), and connects beyond the backlog are
/// dropped by the kernel and retried on TCP's backoff (1, 2, 4... s):
/// measured against ngircd, with 256 at once 22 of 1,000 clients still had
/// no `001` after 60 s; with 8 at once all 1,000 joined in 0.5 s. Set-up
/// is not measured, so this costs a run nothing but a server far away
/// (each client's set-up takes a few round trips).
pub const MAX_IN_PROGRESS: usize = 8;
/// How long the reachability check waits for a connection at most.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What a chat load run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ChatLoadReport {
    pub connections: usize,
    /// PRIVMSGs sent (handed whole to the kernel).
    pub sent: u64,
    /// (message, member) arrivals, each counted once.
    pub deliveries: u64,
    /// `sent × (users - 1)`.
    pub expected_deliveries: u64,
    /// The score: deliveries per second of `elapsed_s`.
    pub messages_per_s: f64,
    pub sent_per_s: f64,
    /// From the first send to the last delivery (with no delivery, to the
    /// end of the run).
    pub elapsed_s: f64,
    /// Delivery latency, µs: closed loop from the send, open loop from the
    /// intended send time.
    pub latency_us: Latency,
    /// Per client, µs: from `connect()` to its `366` (end of NAMES, the
    /// end of its JOIN).
    pub connect_us: Latency,
    /// Deliveries missing at the end (`expected_deliveries - deliveries`),
    /// those to members the server disconnected included.
    pub lost: u64,
    /// Arrivals of a message a member already had.
    pub duplicates: u64,
    /// Messages that arrived at a member after a later message of the
    /// same sender.
    pub out_of_order: u64,
    /// Errors by kind, the kinds that happened only: `connect` (an attempt
    /// failed; set-up tries three times), `register` and `join` (numeric
    /// error replies), `read`, `write`, `closed` (the server closed a
    /// connection), `parse` (a line or a text that is not this run's),
    /// `misrouted` (a message at a member of another room), `refused` (a
    /// numeric error reply once joined, e.g. 404).
    pub errors: BTreeMap<String, u64>,
    /// The connections the server closed, by the text of its `ERROR` line
    /// (`(no ERROR line)` without one): what `errors["closed"]` counts.
    pub closed_reasons: BTreeMap<String, u64>,
    /// The client threads' CPU time in the run (user + system), s, each
    /// from the start to its last delivery.
    pub client_cpu_s: f64,
    /// That time as a share of what the client's CPUs could give in
    /// `elapsed_s` (1.0 = every client CPU busy all along).
    pub client_busy: f64,
    /// The client, not the server, limited the result: its CPUs were at
    /// least [`CLIENT_BOUND_SHARE`] busy.
    pub client_bound: bool,
    /// One sentence for every output: what limited the result.
    pub bottleneck: String,
}

impl ChatLoadReport {
    /// Why this run has no result, if it has none: a delivery lost,
    /// doubled or out of order (a wrong result), or none made. The one
    /// judgement of `smtlab load chat` (exit 3) and of a `-w chat` sample
    /// (failed).
    pub fn failure(&self) -> Option<String> {
        let closed = if self.closed_reasons.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = self
                .closed_reasons
                .iter()
                .map(|(k, v)| format!("{v} x {k}"))
                .collect();
            format!(" (connections closed by the server: {})", list.join(", "))
        };
        if self.lost + self.duplicates + self.out_of_order > 0 {
            return Some(format!(
                "of {} expected deliveries {} were lost, {} doubled, {} out of order: a wrong \
                 result{closed}",
                self.expected_deliveries, self.lost, self.duplicates, self.out_of_order,
            ));
        }
        if self.deliveries == 0 {
            let errors = smtlab_serving::errors_list(&self.errors);
            return Some(format!(
                "no message delivered: {} sent, errors: {errors}{closed}",
                self.sent
            ));
        }
        None
    }
}

/// Check a configuration's bounds (what `run` checks first).
pub fn check(config: &ChatLoadConfig) -> Result<(), ChatLoadError> {
    let invalid = |s: String| Err(ChatLoadError::Invalid(s));
    if !(1..=MAX_CONNECTIONS).contains(&config.rooms) {
        return invalid(format!(
            "rooms {}: expected 1 to {MAX_CONNECTIONS}",
            config.rooms
        ));
    }
    if !(2..=MAX_USERS).contains(&config.users) {
        return invalid(format!(
            "users {}: expected 2 to {MAX_USERS} per room (a message goes to the other members)",
            config.users
        ));
    }
    let connections = config.rooms * config.users;
    if connections > MAX_CONNECTIONS {
        return invalid(format!(
            "rooms x users = {connections} connections: expected at most {MAX_CONNECTIONS}"
        ));
    }
    if connections * config.users > MAX_PAIRS {
        return invalid(format!(
            "rooms x users x users = {}: expected at most {MAX_PAIRS} (every member tracks \
             every sender of its room)",
            connections * config.users
        ));
    }
    if !(1..=MAX_MESSAGES).contains(&config.messages) {
        return invalid(format!(
            "messages {}: expected 1 to {MAX_MESSAGES} per user",
            config.messages
        ));
    }
    for (what, rate) in [("rate", config.rate), ("connect rate", config.connect_rate)] {
        if let Some(r) = rate {
            if !(r.is_finite() && r > 0.0 && r <= MAX_RATE) {
                return invalid(format!(
                    "{what} {r}: expected a finite number above 0, at most {MAX_RATE:e} per second"
                ));
            }
        }
    }
    if !(1..=MAX_WINDOW).contains(&config.window) {
        return invalid(format!(
            "window {}: expected 1 to {MAX_WINDOW} messages",
            config.window
        ));
    }
    if !(MIN_MESSAGE_BYTES..=MAX_MESSAGE_BYTES).contains(&config.message_bytes) {
        return invalid(format!(
            "message bytes {}: expected {MIN_MESSAGE_BYTES} (the header) to {MAX_MESSAGE_BYTES} \
             (so the relayed line fits IRC's 512 bytes)",
            config.message_bytes
        ));
    }
    if !(1..=MAX_THREADS.min(config.rooms)).contains(&config.threads) {
        return invalid(format!(
            "threads {}: expected 1 to {} (at most one per room: a room's members share a \
             thread, which sees every delivery)",
            config.threads,
            MAX_THREADS.min(config.rooms)
        ));
    }
    for (what, d) in [
        ("connect timeout", config.connect_timeout),
        ("timeout", config.timeout),
    ] {
        if d.is_zero() || d > MAX_DURATION {
            return invalid(format!(
                "{what} {d:?}: expected more than 0, at most 30 days"
            ));
        }
    }
    let p = &config.nick_prefix;
    let longest = message::nick(p, connections - 1).len();
    if !p.starts_with(|c: char| c.is_ascii_alphabetic())
        || !p.chars().all(|c| c.is_ascii_alphanumeric())
        || longest > NICK_LEN
    {
        return invalid(format!(
            "nick prefix {p:?}: expected a letter and letters or digits, short enough that \
             {p}<client in base 36> has at most {NICK_LEN} characters ({longest} for {connections} \
             clients)"
        ));
    }
    let c = &config.channel_prefix;
    if c.is_empty()
        || c.len() > MAX_CHANNEL_PREFIX
        || !c
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_')
    {
        return invalid(format!(
            "channel prefix {c:?}: expected 1 to {MAX_CHANNEL_PREFIX} letters, digits, - or _"
        ));
    }
    Ok(())
}

/// Load the server as `config` says and report what was measured.
pub fn run(config: &ChatLoadConfig) -> Result<ChatLoadReport, ChatLoadError> {
    check(config)?;
    let connections = config.connections();
    fd_limit::ensure(connections as u64 + 2 * config.threads as u64 + fd_limit::MARGIN)?;
    std::net::TcpStream::connect_timeout(&config.target, config.connect_timeout.min(PROBE_TIMEOUT))
        .map_err(|e| ChatLoadError::Unreachable(config.target, e))?;

    let in_progress = MAX_IN_PROGRESS.div_ceil(config.threads).max(1);
    let plans: Vec<client::ThreadPlan> = (0..config.threads)
        .map(|k| client::ThreadPlan {
            index: k,
            rooms: k * config.rooms / config.threads..(k + 1) * config.rooms / config.threads,
            cpu: (!config.cpus.is_empty()).then(|| config.cpus[k % config.cpus.len()]),
            max_in_progress: in_progress,
            connect_rate: config.connect_rate.map(|r| r / config.threads as f64),
        })
        .collect();
    // Every message's time is counted from here, in every thread.
    let epoch = Instant::now();
    let finish = Finish::new(config.threads);
    let finish = &finish;

    let (results, setup_error) = std::thread::scope(|scope| {
        let (ready_tx, ready_rx) = mpsc::channel::<client::SetUp>();
        let mut handles = Vec::new();
        let mut starts = Vec::new();
        let mut setup_error = None;
        for plan in plans {
            let (tx, rx) = mpsc::channel::<Instant>();
            let ready = ready_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("smtlab-chat-{}", plan.index))
                .spawn_scoped(scope, move || {
                    client::run_thread(config, plan, epoch, ready, rx, finish)
                });
            match spawned {
                Ok(h) => {
                    handles.push(h);
                    starts.push(tx);
                }
                Err(e) => {
                    setup_error = Some(ChatLoadError::Io("starting a client thread".into(), e));
                    break;
                }
            }
        }
        drop(ready_tx);
        // The barrier: every thread's clients joined, or why not.
        let mut failed = 0;
        let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
        for _ in 0..handles.len() {
            match ready_rx.recv() {
                Ok(client::SetUp::Joined) => {}
                Ok(client::SetUp::Failed {
                    clients,
                    reasons: r,
                }) => {
                    failed += clients;
                    for (why, n) in r {
                        *reasons.entry(why).or_default() += n;
                    }
                }
                Ok(client::SetUp::Error(e)) => {
                    setup_error.get_or_insert(e);
                }
                Err(_) => {
                    setup_error.get_or_insert(ChatLoadError::Io(
                        "a client thread ended during set-up".into(),
                        io::Error::other("thread ended"),
                    ));
                }
            }
        }
        if setup_error.is_none() && failed > 0 {
            setup_error = Some(setup_failure(failed, connections, &reasons));
        }
        if setup_error.is_none() {
            if let Some(h) = &config.on_start {
                (h.0)();
            }
            let begin = Instant::now();
            for tx in &starts {
                let _ = tx.send(begin);
            }
        }
        // Dropping the senders calls the threads off when set-up failed.
        drop(starts);
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(ChatLoadError::Io(
                        "a client thread panicked".into(),
                        io::Error::other("panic"),
                    ))
                })
            })
            .collect();
        (results, setup_error)
    });
    if let Some(e) = setup_error {
        return Err(e);
    }
    let mut merged = record::Record::default();
    let mut cpu_s = 0.0;
    for r in results {
        if let Some(t) = r? {
            merged.merge(&t.record);
            cpu_s += t.cpu.as_secs_f64();
        }
    }
    Ok(report(config, &merged, cpu_s, Instant::now()))
}

/// "12 of 200 clients did not register and join: registration refused:
/// 433 Nickname already in use (12)".
fn setup_failure(failed: usize, total: usize, reasons: &BTreeMap<String, u64>) -> ChatLoadError {
    let mut by_count: Vec<(&String, &u64)> = reasons.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let list: Vec<String> = by_count
        .iter()
        .map(|(why, n)| format!("{why} ({n})"))
        .collect();
    ChatLoadError::Setup(format!(
        "{failed} of {total} clients did not register and join: {}",
        list.join("; ")
    ))
}

/// The report of a run whose threads' records merged into `r`.
fn report(config: &ChatLoadConfig, r: &record::Record, cpu_s: f64, end: Instant) -> ChatLoadReport {
    let elapsed_s = match (r.first_send, r.last_delivery) {
        (Some(first), Some(last)) => last.saturating_duration_since(first).as_secs_f64(),
        (Some(first), None) => end.saturating_duration_since(first).as_secs_f64(),
        _ => 0.0,
    };
    let per_s = |n: u64| {
        if elapsed_s > 0.0 {
            n as f64 / elapsed_s
        } else {
            0.0
        }
    };
    let expected = r.sent * (config.users as u64 - 1);
    let allowed = smtlab_sys::current_affinity().ok().map(|s| s.len());
    let cpus = cpu::client_cpus(config.threads, &config.cpus, allowed);
    let busy = cpu::share(cpu_s, elapsed_s, cpus);
    let client_bound = busy >= CLIENT_BOUND_SHARE;
    ChatLoadReport {
        connections: config.connections(),
        sent: r.sent,
        deliveries: r.deliveries,
        expected_deliveries: expected,
        messages_per_s: per_s(r.deliveries),
        sent_per_s: per_s(r.sent),
        elapsed_s,
        latency_us: r.latency_us(),
        connect_us: r.connect_us(),
        lost: expected.saturating_sub(r.deliveries),
        duplicates: r.duplicates,
        out_of_order: r.out_of_order,
        errors: r.errors_by_kind(),
        closed_reasons: r.closed_reasons(),
        client_cpu_s: cpu_s,
        client_busy: busy,
        client_bound,
        bottleneck: bottleneck(config.rate, busy, client_bound),
    }
}

/// What limited the result, in one sentence.
fn bottleneck(rate: Option<f64>, busy: f64, client_bound: bool) -> String {
    let pct = (busy * 100.0).round();
    if client_bound {
        format!(
            "the load generator (its CPU was {pct}% busy): the score is a lower bound of the \
             server's"
        )
    } else if let Some(r) = rate {
        format!(
            "the offered rate ({r} messages/s, open loop; the load generator's CPU was {pct}% \
             busy): the score is what the server delivered at that rate, not its most"
        )
    } else {
        format!("the server (the load generator's CPU was {pct}% busy)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ChatLoadConfig {
        ChatLoadConfig::new("127.0.0.1:6667".parse().unwrap(), 3, 4, 20)
    }

    #[test]
    fn a_lost_doubled_reordered_or_missing_delivery_is_a_failure() {
        let ok = ChatLoadReport {
            connections: 4,
            sent: 8,
            deliveries: 24,
            expected_deliveries: 24,
            ..Default::default()
        };
        assert_eq!(ok.failure(), None);
        // The server died: `load chat` said `lost 297` and exited 0.
        let lost = ChatLoadReport {
            deliveries: 21,
            lost: 3,
            closed_reasons: [("(no ERROR line)".to_string(), 2)].into(),
            ..ok.clone()
        };
        assert_eq!(
            lost.failure().unwrap(),
            "of 24 expected deliveries 3 were lost, 0 doubled, 0 out of order: a wrong result \
             (connections closed by the server: 2 x (no ERROR line))"
        );
        for r in [
            ChatLoadReport {
                duplicates: 1,
                ..ok.clone()
            },
            ChatLoadReport {
                out_of_order: 1,
                ..ok.clone()
            },
        ] {
            assert!(r.failure().unwrap().ends_with("a wrong result"), "{r:?}");
        }
        let none = ChatLoadReport {
            sent: 0,
            deliveries: 0,
            expected_deliveries: 0,
            errors: [("write".to_string(), 4)].into(),
            ..ok
        };
        assert_eq!(
            none.failure().unwrap(),
            "no message delivered: 0 sent, errors: write 4"
        );
    }

    fn invalid(c: &ChatLoadConfig) -> String {
        match check(c) {
            Err(ChatLoadError::Invalid(s)) => s,
            other => panic!("{other:?}"),
        }
    }

    /// A change to a valid configuration.
    type Change = fn(&mut ChatLoadConfig);

    #[test]
    fn every_bound_names_its_field() {
        assert!(check(&config()).is_ok());
        let cases: Vec<(&str, Change)> = vec![
            ("rooms 0", |c| c.rooms = 0),
            ("users 1", |c| c.users = 1),
            ("rooms x users = 400000", |c| c.rooms = 100_000),
            ("rooms x users x users", |c| {
                c.rooms = 20;
                c.users = 1_000
            }),
            ("messages 0", |c| c.messages = 0),
            ("rate NaN", |c| c.rate = Some(f64::NAN)),
            ("rate 0", |c| c.rate = Some(0.0)),
            ("connect rate inf", |c| c.connect_rate = Some(f64::INFINITY)),
            ("window 0", |c| c.window = 0),
            ("message bytes 33", |c| c.message_bytes = 33),
            ("message bytes 381", |c| c.message_bytes = 381),
            ("threads 4", |c| c.threads = 4),
            ("threads 0", |c| c.threads = 0),
            ("timeout 0ns", |c| c.timeout = Duration::ZERO),
            ("nick prefix \"1x\"", |c| c.nick_prefix = "1x".into()),
            ("nick prefix \"abcdefghi\"", |c| {
                c.nick_prefix = "abcdefghi".into()
            }),
            ("channel prefix \"\"", |c| c.channel_prefix.clear()),
            ("channel prefix \"a b\"", |c| {
                c.channel_prefix = "a b".into()
            }),
        ];
        for (name, change) in cases {
            let mut c = config();
            change(&mut c);
            let message = invalid(&c);
            assert!(message.starts_with(name), "{name}: {message}");
        }
        // 8 characters of prefix leave one digit: 36 clients at most.
        let mut c = config();
        c.nick_prefix = "abcdefgh".into();
        c.rooms = 9;
        assert!(check(&c).is_ok());
    }

    #[test]
    fn a_set_up_failure_lists_its_reasons_most_first() {
        let reasons: BTreeMap<String, u64> = [
            (
                "registration refused: 433 Nickname already in use".to_string(),
                12,
            ),
            ("no 001 (welcome) within 60 s".to_string(), 3),
        ]
        .into_iter()
        .collect();
        let e = setup_failure(15, 200, &reasons).to_string();
        assert_eq!(
            e,
            "15 of 200 clients did not register and join: registration refused: 433 Nickname \
             already in use (12); no 001 (welcome) within 60 s (3)"
        );
    }

    #[test]
    fn the_bottleneck_sentence_says_who() {
        assert!(
            bottleneck(None, 0.97, true).starts_with("the load generator (its CPU was 97% busy)")
        );
        assert!(bottleneck(None, 0.2, false).starts_with("the server"));
        assert!(bottleneck(Some(200.0), 0.2, false).starts_with("the offered rate (200 messages/s"));
    }
}
