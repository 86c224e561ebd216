//! The chat load generator (`smtlab load chat`) against real and fake IRC
//! servers.
//!
//! Against ngircd (Debian's, started here with the reference
//! configuration, skipped with the reason printed when it is absent): a
//! closed-loop run delivers every message exactly once and in order; an
//! open-loop run takes about sent / rate; 1,000 clients in 50 rooms of 20
//! lose nothing.
//!
//! Against a small IRC server written here (a thread per connection,
//! answering 001 and 366 and relaying PRIVMSGs), with one fault switched
//! on per test: a dropped delivery is one `lost`, a doubled one one
//! `duplicates`, two messages of a sender swapped for one member an
//! `out_of_order`, a member disconnected with an `ERROR` line a `closed`
//! error with its reason (and the run still ends), a nickname refused with
//! 433 a set-up error naming it. Every client answers the server's PING.
//!
//! Every process started is killed and reaped, even when a test fails
//! (guards with `Drop`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use smtlab_chat::load::{self as chatload, ChatLoadConfig, ChatLoadError, ChatLoadReport};
use smtlab_chat::ngircd::{self, NgircdConfig};

// ---- ngircd ----

/// A running ngircd; killed and reaped on drop.
struct Ngircd {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Drop for Ngircd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Ngircd {
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }
}

/// Run, or fail with the error and the end of ngircd's log.
fn run_or_show_log(config: &ChatLoadConfig, server: &Ngircd) -> ChatLoadReport {
    chatload::run(config).unwrap_or_else(|e| {
        let log = server.log();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        panic!("{e}\nthe end of ngircd's log:\n{}", tail.join("\n"))
    })
}

/// A port free a moment ago. ngircd cannot listen on port 0, so the port
/// is chosen by binding port 0 and closing; another process may take it
/// before ngircd binds it, hence the second try in `start_ngircd`.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Start ngircd for `max_connections` clients, or `None` (and a printed
/// `skipped` line) when it is not installed.
fn start_ngircd(max_connections: usize) -> Option<Ngircd> {
    let Some(binary) = ngircd::find() else {
        println!(
            "skipped: ngircd not installed ({})",
            ngircd::missing_reason()
        );
        return None;
    };
    let mut last_log = String::new();
    for _attempt in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        let config = NgircdConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], free_port())),
            max_connections,
            dir: dir.path().to_path_buf(),
        };
        ngircd::write_files(&config).unwrap();
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let child = Command::new(&binary)
            .args(config.args())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut server = Ngircd {
            child,
            addr: config.listen,
            dir,
        };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if TcpStream::connect(server.addr).is_ok() {
                return Some(server);
            }
            if server.child.try_wait().unwrap().is_some() {
                break; // the port was taken: again with another
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        last_log = server.log();
    }
    panic!("ngircd did not start twice; its log:\n{last_log}");
}

/// The counts every clean run has.
fn assert_clean(r: &ChatLoadReport, rooms: usize, users: usize, messages: usize) {
    let sent = (rooms * users * messages) as u64;
    assert_eq!(r.connections, rooms * users, "{r:#?}");
    assert_eq!(r.sent, sent, "{r:#?}");
    assert_eq!(r.expected_deliveries, sent * (users as u64 - 1), "{r:#?}");
    assert_eq!(r.deliveries, r.expected_deliveries, "{r:#?}");
    assert_eq!((r.lost, r.duplicates, r.out_of_order), (0, 0, 0), "{r:#?}");
    assert!(r.errors.is_empty(), "{r:#?}");
    assert!(
        r.latency_us.p50 > 0.0 && r.latency_us.max >= r.latency_us.p99,
        "{r:#?}"
    );
    assert!(
        r.connect_us.p50 > 0.0 && r.connect_us.max >= r.connect_us.p50,
        "{r:#?}"
    );
    assert!(r.messages_per_s > 0.0 && r.elapsed_s > 0.0, "{r:#?}");
    let score = r.deliveries as f64 / r.elapsed_s;
    assert!((r.messages_per_s - score).abs() < 1e-6 * score, "{r:#?}");
    assert!(!r.bottleneck.is_empty());
}

#[test]
fn ngircd_closed_loop_delivers_every_message_once_in_order() {
    let Some(server) = start_ngircd(64) else {
        return;
    };
    let mut config = ChatLoadConfig::new(server.addr, 3, 4, 20);
    config.threads = 2;
    let r = run_or_show_log(&config, &server);
    assert_clean(&r, 3, 4, 20);
    assert_eq!(r.sent, 240);
    assert_eq!(r.deliveries, 720);
    assert!(r.client_cpu_s > 0.0 && r.client_busy > 0.0, "{r:#?}");
    assert!(
        r.bottleneck.starts_with("the server") || r.client_bound,
        "{r:#?}"
    );
    println!(
        "ngircd closed loop 3x4x20: {:.0} messages/s, p50 {} us, connect p50 {} us",
        r.messages_per_s, r.latency_us.p50, r.connect_us.p50
    );
}

#[test]
fn ngircd_open_loop_runs_at_its_rate() {
    let Some(server) = start_ngircd(64) else {
        return;
    };
    let mut config = ChatLoadConfig::new(server.addr, 2, 3, 50);
    config.rate = Some(200.0);
    // The longest text: the relayed line still fits IRC's 512 bytes, or
    // the texts would arrive cut (`parse` errors).
    config.message_bytes = chatload::MAX_MESSAGE_BYTES;
    let r = run_or_show_log(&config, &server);
    assert_clean(&r, 2, 3, 50);
    // 300 messages at 200/s: the last is meant to go 1.495 s after the
    // first.
    assert!((1.4..=3.0).contains(&r.elapsed_s), "{r:#?}");
    assert!((100.0..=215.0).contains(&r.sent_per_s), "{r:#?}");
    assert!(r.bottleneck.starts_with("the offered rate"), "{r:#?}");
}

#[test]
fn ngircd_takes_a_thousand_clients_without_losing_a_message() {
    const NEEDED: u64 = 2_200;
    let limit = std::process::Command::new("sh")
        .args(["-c", "ulimit -Hn"])
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(u64::MAX); // "unlimited"
    if limit < NEEDED {
        println!(
            "skipped: the open-file hard limit is {limit}, below the {NEEDED} that 1,000 \
             clients and ngircd's 1,000 sockets need"
        );
        return;
    }
    let Some(server) = start_ngircd(1_100) else {
        return;
    };
    let config = ChatLoadConfig::new(server.addr, 50, 20, 2);
    let r = run_or_show_log(&config, &server);
    assert_clean(&r, 50, 20, 2);
    assert_eq!(r.deliveries, 2_000 * 19);
    println!(
        "ngircd 1,000 clients: {:.0} messages/s, p99 {} us, connect p99 {} us",
        r.messages_per_s, r.latency_us.p99, r.connect_us.p99
    );
}

/// The largest case, 10,000 clients in 500 rooms of 20 on one client
/// thread. Not run by default: it needs 20,200 descriptors and takes
/// about 45 s on a 2-CPU machine, ngircd busy all along (it walks all its
/// connections on every pass of its loop: 30 s to set up, 190,000
/// deliveries at about 13,000/s); `cargo test --test load_chat --
/// --ignored`.
#[test]
#[ignore]
fn ngircd_takes_ten_thousand_clients_on_one_thread() {
    let Some(server) = start_ngircd(10_100) else {
        return;
    };
    let mut config = ChatLoadConfig::new(server.addr, 500, 20, 1);
    config.timeout = Duration::from_secs(120);
    config.connect_timeout = Duration::from_secs(180);
    let started = Instant::now();
    let r = run_or_show_log(&config, &server);
    assert_clean(&r, 500, 20, 1);
    println!(
        "ngircd 10,000 clients: {:.0} messages/s, p99 {} us, connect p99 {} us, client busy \
         {:.2}, {:.1} s in all",
        r.messages_per_s,
        r.latency_us.p99,
        r.connect_us.p99,
        r.client_busy,
        started.elapsed().as_secs_f64()
    );
}

// ---- a fake IRC server ----

/// What the fake server does wrong, counting (message, member) relays
/// from 1 over its life.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// The nth relay is not sent.
    Drop(u64),
    /// The nth relay is sent twice.
    Duplicate(u64),
    /// The nth relay is held until its sender's next message to that
    /// member has been sent.
    Reorder(u64),
    /// At the nth relay, its member gets `ERROR :Closing Link: ...
    /// (Excess Flood)` and is disconnected.
    Kill(u64),
    /// This nickname is refused with 433.
    NickInUse(&'static str),
    /// Every client gets `ERROR :Closing Link: (Server full)` on its first
    /// line and is disconnected.
    Full,
}

#[derive(Default)]
struct Shared {
    /// Channel → its members' nicks and sockets.
    channels: HashMap<String, Vec<(String, TcpStream)>>,
    relays: u64,
    /// (member, sender, line) held back by `Fault::Reorder`.
    held: Option<(String, String, Vec<u8>)>,
}

/// The fake server; stopped and its threads joined on drop.
struct FakeIrc {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    pongs: Arc<AtomicU64>,
    /// When each connection was accepted.
    accepted: Arc<Mutex<Vec<Instant>>>,
    accept: Option<JoinHandle<()>>,
    workers: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl FakeIrc {
    fn start(fault: Fault) -> FakeIrc {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let pongs = Arc::new(AtomicU64::new(0));
        let shared = Arc::new(Mutex::new(Shared::default()));
        let workers: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accepted: Arc<Mutex<Vec<Instant>>> = Arc::default();
        let accept = {
            let (stop, pongs, workers) = (stop.clone(), pongs.clone(), workers.clone());
            let accepted = accepted.clone();
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    accepted.lock().unwrap().push(Instant::now());
                    let (stop, pongs, shared) = (stop.clone(), pongs.clone(), shared.clone());
                    let h = std::thread::spawn(move || {
                        serve(conn, fault, &stop, &pongs, &shared);
                    });
                    workers.lock().unwrap().push(h);
                }
            })
        };
        FakeIrc {
            addr,
            stop,
            pongs,
            accepted,
            accept: Some(accept),
            workers,
        }
    }
}

impl Drop for FakeIrc {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wake the accept loop
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        for h in self.workers.lock().unwrap().drain(..) {
            let _ = h.join();
        }
    }
}

/// One client of the fake server.
fn serve(
    conn: TcpStream,
    fault: Fault,
    stop: &AtomicBool,
    pongs: &AtomicU64,
    shared: &Mutex<Shared>,
) {
    conn.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let _ = conn.set_nodelay(true);
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    let mut nick = String::from("*");
    let mut line = String::new();
    loop {
        match reader.read_line(&mut line) {
            Ok(0) => return,
            Ok(_) if line.ends_with('\n') => {}
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                continue;
            }
            Err(_) => return,
        }
        if fault == Fault::Full {
            let _ = out.write_all(b"ERROR :Closing Link: (Server full)\r\n");
            return;
        }
        let l = std::mem::take(&mut line);
        let l = l.trim_end();
        let (command, rest) = l.split_once(' ').unwrap_or((l, ""));
        let reply = match command {
            "NICK" => {
                if matches!(fault, Fault::NickInUse(refused) if refused == rest) {
                    format!(":fake.test 433 * {rest} :Nickname already in use\r\n")
                } else {
                    nick = rest.to_string();
                    String::new()
                }
            }
            "USER" if nick != "*" => format!(
                ":fake.test 001 {nick} :Welcome\r\n:fake.test 375 {nick} :- MOTD\r\nPING :fake-{nick}\r\n"
            ),
            "PONG" => {
                if rest == format!(":fake-{nick}") {
                    pongs.fetch_add(1, Ordering::SeqCst);
                }
                String::new()
            }
            "JOIN" => {
                let mut s = shared.lock().unwrap();
                let members = s.channels.entry(rest.to_string()).or_default();
                members.push((nick.clone(), out.try_clone().unwrap()));
                let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
                format!(
                    ":{nick}!u@h JOIN {rest}\r\n:fake.test 353 {nick} = {rest} :{}\r\n:fake.test 366 {nick} {rest} :End of NAMES list\r\n",
                    names.join(" ")
                )
            }
            "PRIVMSG" => {
                let channel = rest.split(' ').next().unwrap_or("");
                let relayed = format!(":{nick}!u@h PRIVMSG {rest}\r\n").into_bytes();
                relay(shared, fault, channel, &nick, &relayed);
                String::new()
            }
            _ => String::new(),
        };
        if !reply.is_empty() && out.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// Send `line` from `sender` to the other members of `channel`, with the
/// fault.
fn relay(shared: &Mutex<Shared>, fault: Fault, channel: &str, sender: &str, line: &[u8]) {
    let mut s = shared.lock().unwrap();
    let s = &mut *s;
    let Some(members) = s.channels.get_mut(channel) else {
        return;
    };
    for (member, stream) in members.iter_mut() {
        if member == sender {
            continue;
        }
        s.relays += 1;
        let n = s.relays;
        match fault {
            Fault::Drop(k) if k == n => continue,
            Fault::Duplicate(k) if k == n => {
                let _ = stream.write_all(line);
            }
            Fault::Reorder(k) if k == n => {
                s.held = Some((member.clone(), sender.to_string(), line.to_vec()));
                continue;
            }
            Fault::Kill(k) if k == n => {
                let _ = stream.write_all(b"ERROR :Closing Link: x[127.0.0.1] (Excess Flood)\r\n");
                let _ = stream.shutdown(std::net::Shutdown::Both);
                continue;
            }
            _ => {}
        }
        let _ = stream.write_all(line);
        if s.held
            .as_ref()
            .is_some_and(|(m, from, _)| m == member && from == sender)
        {
            let (_, _, late) = s.held.take().unwrap();
            let _ = stream.write_all(&late);
        }
    }
}

fn fake_config(server: &FakeIrc) -> ChatLoadConfig {
    let mut c = ChatLoadConfig::new(server.addr, 1, 3, 5);
    c.timeout = Duration::from_secs(1);
    c.connect_timeout = Duration::from_secs(10);
    c
}

#[test]
fn a_clean_fake_server_gives_exact_counts_and_gets_its_pongs() {
    let server = FakeIrc::start(Fault::None);
    let mut config = fake_config(&server);
    config.rooms = 2;
    config.window = 3;
    config.threads = 2;
    // Both threads on this process's first CPU.
    config.cpus = smtlab_sys::current_affinity()
        .unwrap()
        .iter()
        .take(1)
        .collect();
    let r = chatload::run(&config).unwrap();
    assert_clean(&r, 2, 3, 5);
    assert_eq!(r.deliveries, 60);
    assert_eq!(server.pongs.load(Ordering::SeqCst), 6);
}

#[test]
fn connects_are_paced_by_the_connect_rate() {
    let server = FakeIrc::start(Fault::None);
    let mut config = fake_config(&server);
    config.users = 4;
    config.messages = 1;
    config.connect_rate = Some(20.0);
    let r = chatload::run(&config).unwrap();
    assert_clean(&r, 1, 4, 1);
    let accepted = server.accepted.lock().unwrap().clone();
    // The reachability probe, then the 4 clients 50 ms apart.
    assert_eq!(accepted.len(), 5);
    for pair in accepted[1..].windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= Duration::from_millis(45), "{gap:?}");
    }
}

#[test]
fn a_dropped_delivery_is_one_lost() {
    let server = FakeIrc::start(Fault::Drop(4));
    let started = Instant::now();
    let r = chatload::run(&fake_config(&server)).unwrap();
    assert_eq!(r.sent, 15, "{r:#?}");
    assert_eq!(r.expected_deliveries, 30, "{r:#?}");
    assert_eq!(r.deliveries, 29, "{r:#?}");
    assert_eq!((r.lost, r.duplicates, r.out_of_order), (1, 0, 0), "{r:#?}");
    // The dropped message held its sender one timeout (1 s), and the run
    // waited one more for it at the end.
    assert!(started.elapsed() < Duration::from_secs(8), "{r:#?}");
}

#[test]
fn a_doubled_delivery_is_one_duplicate() {
    let server = FakeIrc::start(Fault::Duplicate(7));
    let r = chatload::run(&fake_config(&server)).unwrap();
    assert_eq!((r.sent, r.deliveries), (15, 30), "{r:#?}");
    assert_eq!((r.lost, r.duplicates, r.out_of_order), (0, 1, 0), "{r:#?}");
}

#[test]
fn two_swapped_messages_are_out_of_order() {
    let server = FakeIrc::start(Fault::Reorder(1));
    let mut config = fake_config(&server);
    // A sender's second message must go before its first has arrived
    // everywhere for the server to have two to swap.
    config.window = 2;
    let r = chatload::run(&config).unwrap();
    assert_eq!((r.sent, r.deliveries), (15, 30), "{r:#?}");
    assert_eq!((r.lost, r.duplicates), (0, 0), "{r:#?}");
    assert_eq!(r.out_of_order, 1, "{r:#?}");
}

#[test]
fn a_member_the_server_disconnects_is_counted_and_the_run_ends() {
    let server = FakeIrc::start(Fault::Kill(3));
    let started = Instant::now();
    let r = chatload::run(&fake_config(&server)).unwrap();
    assert_eq!(r.errors.get("closed"), Some(&1), "{r:#?}");
    assert_eq!(
        r.closed_reasons
            .get("Closing Link: x[127.0.0.1] (Excess Flood)"),
        Some(&1),
        "{r:#?}"
    );
    assert_eq!(r.deliveries + r.lost, r.expected_deliveries, "{r:#?}");
    assert!(r.lost >= 1, "{r:#?}");
    assert_eq!(r.duplicates, 0, "{r:#?}");
    assert!(started.elapsed() < Duration::from_secs(8), "{r:#?}");
}

#[test]
fn a_refused_nickname_fails_the_set_up_with_its_reason() {
    let server = FakeIrc::start(Fault::NickInUse("s1"));
    match chatload::run(&fake_config(&server)) {
        Err(ChatLoadError::Setup(why)) => {
            assert!(why.starts_with("1 of 3 clients"), "{why}");
            assert!(why.contains("433 Nickname already in use"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_server_that_closes_every_connection_fails_the_set_up() {
    let server = FakeIrc::start(Fault::Full);
    match chatload::run(&fake_config(&server)) {
        Err(ChatLoadError::Setup(why)) => assert_eq!(
            why,
            "3 of 3 clients did not register and join: closed by the server: Closing Link: \
             (Server full) (3)"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unreachable_server_is_an_error_at_once() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let started = Instant::now();
    match chatload::run(&ChatLoadConfig::new(addr, 1, 2, 1)) {
        Err(ChatLoadError::Unreachable(a, _)) => assert_eq!(a, addr),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn invalid_configurations_name_their_field() {
    let addr: SocketAddr = "127.0.0.1:6667".parse().unwrap();
    let cases: [(ChatLoadConfig, &str); 3] = [
        (ChatLoadConfig::new(addr, 1, 1, 1), "users 1"),
        (ChatLoadConfig::new(addr, 0, 2, 1), "rooms 0"),
        (
            ChatLoadConfig {
                rate: Some(f64::NAN),
                ..ChatLoadConfig::new(addr, 1, 2, 1)
            },
            "rate NaN",
        ),
    ];
    for (config, field) in cases {
        match chatload::run(&config) {
            Err(ChatLoadError::Invalid(why)) => assert!(why.starts_with(field), "{why}"),
            other => panic!("{field}: {other:?}"),
        }
    }
}

/// The phase hooks bound the measured phase exactly: at `on_start` every
/// client has joined and no message was sent; at `on_end` every message
/// is in and every connection still open.
#[test]
fn the_phase_hooks_bound_the_messages_and_nothing_else() {
    use std::sync::{Arc, Mutex};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = Arc::new(
        smtlab_chat::server::start(
            &smtlab_chat::server::ChatConfig::new(smtlab_chat::server::Model::Event, 1),
            listener,
        )
        .unwrap(),
    );
    let seen: Arc<Mutex<Vec<(&str, smtlab_chat::server::ChatSnapshot)>>> = Arc::default();
    let mut c = smtlab_chat::load::ChatLoadConfig::new(server.addr(), 3, 4, 5);
    c.threads = 2;
    let (s1, v1) = (server.clone(), seen.clone());
    c.on_start = Some(smtlab_chat::load::Hook(Arc::new(move || {
        v1.lock().unwrap().push(("start", s1.stats().counters));
    })));
    let (s2, v2) = (server.clone(), seen.clone());
    c.on_end = Some(smtlab_chat::load::Hook(Arc::new(move || {
        v2.lock().unwrap().push(("end", s2.stats().counters));
    })));
    let r = smtlab_chat::load::run(&c).unwrap();
    assert_eq!(r.lost, 0);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "each hook once");
    let (first, at_start) = seen[0];
    let (last, at_end) = seen[1];
    assert_eq!((first, last), ("start", "end"));
    assert_eq!(at_start.registered, 12);
    assert_eq!(at_start.messages_in, 0);
    assert_eq!(at_end.messages_in, 60);
    assert_eq!(at_end.deliveries, 180);
    assert_eq!(at_end.open, 12, "no connection closed before on_end");
}
