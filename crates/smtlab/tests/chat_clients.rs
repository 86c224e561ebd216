//! Real IRC clients against `smtlab serve chat`, in each model, on
//! 127.0.0.1 port 0: two clients of the Python `irc` library (jaraco's,
//! `tests/irc/two_clients.py`) register, join a channel, list it with WHO,
//! exchange channel and private messages, PING, change a nick and quit; two `ii` (suckless's
//! FIFO-driven client) exchange a channel and a private message and see the
//! other's NICK and QUIT, checked in their `out` files. Each client parses
//! the server's prefixes and numerics its own way, unlike the raw sockets of
//! `chat_serve.rs` and smtlab's own load generator. Skipped, with the
//! reason, where python3, its `irc` module or `ii` is not installed
//! (scripts/setup.sh installs them).

mod support;

use std::ffi::OsString;
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::serve::Served;

const MODELS: [&str; 3] = ["thread2", "thread", "event"];

/// How long any one thing a client should receive may take.
const WAIT: Duration = Duration::from_secs(10);

/// A child killed and reaped when dropped, whichever way the test ends.
struct Reaped(Child);

impl Reaped {
    /// Waits up to `limit` for it to exit (`None`: still running).
    fn wait_for(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let until = Instant::now() + limit;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() > until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// `smtlab serve chat --model MODEL --threads 1 --listen 127.0.0.1:0`, and
/// the address its first line names.
fn serve(model: &str) -> (Served, SocketAddr) {
    let server = Served::start(&[
        "chat",
        "--model",
        model,
        "--threads",
        "1",
        "--listen",
        "127.0.0.1:0",
    ]);
    // listening on irc://IP:PORT/ model=M workers=N nofile=L
    let first = &server.first;
    let addr = first
        .split(' ')
        .nth(2)
        .and_then(|u| u.strip_prefix("irc://"))
        .and_then(|u| u.strip_suffix('/'))
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("{model}: no address in {first:?}"));
    (server, addr)
}

// ----- the Python irc library ----------------------------------------------

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/irc/two_clients.py")
}

/// A python3 that imports `irc.client`: the one on `PATH`, else Debian's
/// own (python3-irc installs the module for `/usr/bin/python3`, which a
/// pyenv or venv python3 earlier on `PATH` does not see). `Err`: why not.
fn python_with_irc() -> Result<OsString, String> {
    let mut any_python = false;
    for python in ["python3", "/usr/bin/python3"] {
        let Ok(out) = Command::new(python)
            .args(["-c", "import irc.client"])
            .stdin(Stdio::null())
            .output()
        else {
            continue;
        };
        any_python = true;
        if out.status.success() {
            return Ok(python.into());
        }
    }
    Err(if any_python {
        "the Python irc module is not installed (Debian: python3-irc; scripts/setup.sh installs it)"
    } else {
        "python3 is not installed (scripts/setup.sh installs it)"
    }
    .to_string())
}

/// The script against `addr`, killed if it runs past 60 s (its own waits
/// end well before: a few, of at most 10 s each).
fn two_clients(python: &OsString, addr: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = Reaped(
        Command::new(python)
            .arg(script())
            .arg(addr)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap(),
    );
    let status = child
        .wait_for(Duration::from_secs(60))
        .unwrap_or_else(|| panic!("two_clients.py against {addr} ran past 60 s"));
    Output {
        status,
        stdout: std::fs::read(&out).unwrap(),
        stderr: std::fs::read(&err).unwrap(),
    }
}

#[test]
fn python_irc_clients_register_talk_rename_and_quit_in_every_model() {
    let python = match python_with_irc() {
        Ok(p) => p,
        Err(why) => return support::skip(&why),
    };
    for model in MODELS {
        let (_server, addr) = serve(model);
        let out = two_clients(&python, &addr.to_string());
        support::assert_success(&out, &format!("two_clients.py against --model {model}"));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "two_clients: ok\n");
    }
}

/// The script fails, naming what did not arrive, against a server that
/// closes every connection at once: a pass above means the clients got
/// what they waited for.
#[test]
fn python_irc_clients_name_what_did_not_arrive() {
    let python = match python_with_irc() {
        Ok(p) => p,
        Err(why) => return support::skip(&why),
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            drop(conn);
        }
    });
    let out = two_clients(&python, &addr);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "two_clients: ann did not receive the welcome (001) before its connection was closed"
        ),
        "{err}"
    );
}

// ----- ii ------------------------------------------------------------------

/// `ii`, if installed.
fn find_ii() -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/bin")])
        .map(|d| d.join("ii"))
        .find(|p| p.is_file())
}

/// One ii connected to `addr` as `nick`, its tree under `root/nick`.
struct Ii {
    nick: &'static str,
    /// `root/nick/127.0.0.1`: the server's `in` and `out`, a directory per
    /// channel and per user talked to.
    dir: PathBuf,
    process: Reaped,
}

impl Ii {
    fn start(exe: &Path, root: &Path, addr: SocketAddr, nick: &'static str) -> Ii {
        let prefix = root.join(nick);
        let log = std::fs::File::create(root.join(format!("{nick}.log"))).unwrap();
        let child = Command::new(exe)
            .args(["-s", &addr.ip().to_string(), "-p", &addr.port().to_string()])
            .args(["-n", nick, "-f", nick])
            .arg("-i")
            .arg(&prefix)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        Ii {
            nick,
            dir: prefix.join(addr.ip().to_string()),
            process: Reaped(child),
        }
    }

    /// Writes `line` into the `in` FIFO under `sub` ("" for the server's).
    fn say(&self, sub: &str, line: &str) {
        let fifo = self.dir.join(sub).join("in");
        let until = Instant::now() + WAIT;
        // Non-blocking: opening a FIFO nobody reads fails (ENXIO) instead of
        // hanging the test when ii is gone or has not made it yet.
        let mut file = loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
                .open(&fifo)
            {
                Ok(f) => break f,
                Err(e) => {
                    assert!(
                        Instant::now() < until,
                        "{}: cannot write to {}: {e}",
                        self.nick,
                        fifo.display()
                    );
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        };
        file.write_all(format!("{line}\n").as_bytes()).unwrap();
    }

    /// Waits until the `out` file under `sub` has a line ending with `tail`
    /// (ii starts each with a timestamp).
    fn expect(&self, sub: &str, tail: &str, what: &str) {
        let out = self.dir.join(sub).join("out");
        let until = Instant::now() + WAIT;
        loop {
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            if text.lines().any(|l| l.ends_with(tail)) {
                return;
            }
            assert!(
                Instant::now() < until,
                "{}: did not receive {what} ({tail:?}) in {} within {WAIT:?}; it has:\n{text}",
                self.nick,
                out.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn ii_clients_exchange_channel_and_private_messages_in_every_model() {
    let Some(exe) = find_ii() else {
        return support::skip("ii is not installed (Debian: ii; scripts/setup.sh installs it)");
    };
    for model in MODELS {
        let root = tempfile::tempdir().unwrap();
        let (_server, addr) = serve(model);
        let ann = Ii::start(&exe, root.path(), addr, "ann");
        let ben = Ii::start(&exe, root.path(), addr, "ben");
        for c in [&ann, &ben] {
            let n = c.nick;
            let welcome = format!("Welcome to the Internet Relay Network {n}!{n}@127.0.0.1");
            c.expect("", &welcome, "the welcome");
        }
        let lab = "#lab";
        ann.say("", &format!("/j {lab}"));
        ann.expect(lab, "-!- ann(ann@127.0.0.1) has joined #lab", "its JOIN");
        ben.say("", &format!("/j {lab}"));
        ann.expect(lab, "-!- ben(ben@127.0.0.1) has joined #lab", "ben's JOIN");
        ben.expect("", " = #lab ann ben", "NAMES of #lab");

        ann.say(lab, "hello from ann");
        ben.expect(lab, " <ann> hello from ann", "ann's channel message");
        // ii opens a query with `/j nick text`; ben's ii makes the query's
        // directory when the message arrives, and answers through it.
        ann.say("", "/j ben private to ben");
        ben.expect("ann", " <ann> private to ben", "ann's private message");
        ben.say("ann", "private to ann");
        ann.expect("ben", " <ben> private to ann", "ben's private message");

        ann.say("", "/n anna");
        ben.expect("", " -!- ann changed nick to anna", "ann's NICK");
        ann.say("", "/q bye");
        ben.expect(
            "",
            " -!- anna(ann@127.0.0.1) has quit \"Quit: bye\"",
            "anna's QUIT",
        );
        ben.say("", "/q");
        // The server closes each connection after its QUIT, and ii exits.
        for mut c in [ann, ben] {
            assert!(
                c.process.wait_for(WAIT).is_some(),
                "{model}: {}'s ii still runs {WAIT:?} after its QUIT",
                c.nick
            );
        }
    }
}
