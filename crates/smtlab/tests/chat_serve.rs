//! `smtlab serve chat`: the chat server through the binary, on 127.0.0.1
//! port 0, in each model: two raw IRC clients (plain sockets) join one
//! channel and see each other's messages; SIGINT and SIGTERM stop it with
//! the `stats:` line and exit 0; bad flags are one line and exit 2.

mod support;

use support::assert_success;
use support::serve::Served;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::Value;

const MODELS: [&str; 3] = ["thread2", "thread", "event"];

/// A running `smtlab serve chat`, killed and reaped when dropped.
struct Serve {
    served: Served,
    addr: SocketAddr,
}

impl Serve {
    fn start(model: &str, extra: &[&str]) -> Serve {
        let mut args = vec!["chat", "--model", model, "--threads", "1"];
        args.extend(["--listen", "127.0.0.1:0"]);
        args.extend(extra);
        let served = Served::start(&args);
        let first = &served.first;
        // listening on irc://IP:PORT/ model=M workers=N nofile=L
        let words: Vec<&str> = first.split(' ').collect();
        assert_eq!(&words[..2], ["listening", "on"], "{first}");
        assert_eq!(words[3], format!("model={model}"), "{first}");
        assert_eq!(words[4], "workers=1", "{first}");
        let nofile: u64 = words[5].strip_prefix("nofile=").unwrap().parse().unwrap();
        assert!(nofile >= 1024, "{first}");
        let addr: SocketAddr = words[2]
            .strip_prefix("irc://")
            .and_then(|u| u.strip_suffix('/'))
            .unwrap()
            .parse()
            .unwrap();
        assert_ne!(addr.port(), 0);
        Serve { served, addr }
    }

    fn stop(self, sig: Signal) -> (ExitStatus, Vec<String>) {
        self.served.stop(sig)
    }
}

/// A raw IRC client over a plain socket.
struct Irc {
    out: TcpStream,
    input: BufReader<TcpStream>,
}

impl Irc {
    fn register(addr: SocketAddr, nick: &str) -> Irc {
        let out = TcpStream::connect(addr).unwrap();
        out.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let input = BufReader::new(out.try_clone().unwrap());
        let mut c = Irc { out, input };
        c.send(&format!("NICK {nick}"));
        c.send(&format!("USER {nick} 0 * :{nick}"));
        c.expect(" 001 ");
        c
    }

    fn send(&mut self, line: &str) {
        self.out
            .write_all(format!("{line}\r\n").as_bytes())
            .unwrap();
    }

    /// Reads lines until one contains `needle`.
    fn expect(&mut self, needle: &str) -> String {
        let mut seen = Vec::new();
        loop {
            let mut line = String::new();
            match self.input.read_line(&mut line) {
                Ok(n) if n > 0 => {
                    let line = line.trim_end().to_string();
                    if line.contains(needle) {
                        return line;
                    }
                    seen.push(line);
                }
                _ => panic!("no line with {needle:?}; saw {seen:?}"),
            }
        }
    }
}

#[test]
fn two_raw_clients_join_one_channel_and_see_each_others_messages() {
    for (model, sig) in MODELS
        .iter()
        .zip([Signal::SIGINT, Signal::SIGTERM, Signal::SIGINT])
    {
        let serve = Serve::start(model, &[]);
        let mut a = Irc::register(serve.addr, "ann");
        let mut b = Irc::register(serve.addr, "ben");
        a.send("JOIN #lab");
        a.expect(" 366 ");
        b.send("JOIN #lab");
        assert_eq!(a.expect(" JOIN "), ":ben!ben@127.0.0.1 JOIN #lab");
        b.expect(" 366 ");
        a.send("PRIVMSG #lab :hello from ann");
        assert_eq!(
            b.expect("PRIVMSG"),
            ":ann!ann@127.0.0.1 PRIVMSG #lab :hello from ann"
        );
        b.send("PRIVMSG #lab :and ben");
        assert_eq!(
            a.expect("PRIVMSG"),
            ":ben!ben@127.0.0.1 PRIVMSG #lab :and ben"
        );
        let (status, rest) = serve.stop(sig);
        assert_eq!(status.code(), Some(0), "{model}: {rest:?}");
        let stats = rest
            .iter()
            .find_map(|l| l.strip_prefix("stats: "))
            .unwrap_or_else(|| panic!("{model}: no stats line in {rest:?}"));
        let stats: Value = serde_json::from_str(stats).unwrap();
        assert_eq!(stats["counters"]["messages_in"], 2, "{model}: {stats}");
        assert_eq!(stats["counters"]["deliveries"], 2, "{model}: {stats}");
        assert_eq!(stats["counters"]["open"], 2, "{model}: {stats}");
        // The server closed both connections.
        let mut line = String::new();
        let _ = a.out.set_read_timeout(Some(Duration::from_secs(5)));
        while a.input.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
            line.clear();
        }
    }
}

#[test]
fn bad_chat_flags_are_one_line_and_exit_2() {
    support::assert_usage_error(
        &[
            "serve",
            "chat",
            "--model",
            "volano",
            "--threads",
            "1",
            "--listen",
            "127.0.0.1:0",
        ],
        "--model volano",
    );
    support::assert_usage_error(
        &[
            "serve",
            "chat",
            "--model",
            "event",
            "--threads",
            "0",
            "--listen",
            "127.0.0.1:0",
        ],
        "--threads 0",
    );
    support::assert_usage_error(
        &[
            "serve",
            "chat",
            "--model",
            "event",
            "--threads",
            "1",
            "--listen",
            "nowhere",
        ],
        "--listen nowhere",
    );
    support::assert_usage_error(
        &[
            "serve",
            "chat",
            "--model",
            "event",
            "--threads",
            "1",
            "--listen",
            "127.0.0.1:0",
            "--send-queue",
            "10",
        ],
        "--send-queue 10",
    );
    // A port already taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    support::assert_usage_error(
        &[
            "serve",
            "chat",
            "--model",
            "event",
            "--threads",
            "1",
            "--listen",
            &addr,
        ],
        &format!("--listen {addr}"),
    );
}

/// ngircd, started with smtlab's generated configuration, killed and
/// reaped when dropped.
struct Ngircd {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Ngircd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_ngircd() -> Option<Ngircd> {
    use smtlab_chat::ngircd::{self, NgircdConfig};
    let exe = ngircd::find()?;
    let dir = tempfile::tempdir().unwrap();
    // ngircd cannot listen on port 0: a free port, taken now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let conf = NgircdConfig {
        listen: addr,
        max_connections: 200,
        dir: dir.path().to_path_buf(),
    };
    ngircd::write_files(&conf).unwrap();
    let child = Command::new(exe)
        .args(conf.args())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Ngircd {
        child,
        addr,
        _dir: dir,
    };
    let until = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < until, "ngircd did not accept connections");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(server)
}

#[test]
fn load_chat_runs_against_ngircd_and_checks_every_delivery() {
    let Some(ngircd) = start_ngircd() else {
        return support::skip("ngircd is not installed (scripts/setup.sh installs it)");
    };
    let addr = ngircd.addr.to_string();
    let out = support::smtlab()
        .args([
            "load",
            "chat",
            &addr,
            "--rooms",
            "3",
            "--users",
            "4",
            "--messages",
            "10",
        ])
        .arg("--json")
        .output()
        .unwrap();
    assert_success(&out, "load chat");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["connections"], 12);
    assert_eq!(doc["sent"], 120);
    assert_eq!(doc["deliveries"], 360, "{doc}");
    assert_eq!(doc["lost"], 0);
    assert_eq!(doc["duplicates"], 0);
    assert_eq!(doc["out_of_order"], 0);
    assert!(doc["messages_per_s"].as_f64().unwrap() > 0.0);
    assert!(doc["bottleneck"].as_str().is_some_and(|b| !b.is_empty()));
    // The text output names the score and the check.
    let out = support::smtlab()
        .args([
            "load",
            "chat",
            &addr,
            "--rooms",
            "1",
            "--users",
            "2",
            "--messages",
            "3",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("messages delivered/s"), "{text}");
    assert!(
        text.contains("delivered     6 of 6 expected: lost 0"),
        "{text}"
    );
}
