//! The chat server in each of its three models, driven by raw IRC clients
//! over plain sockets: registration and the welcome, channels and their
//! messages, the error numerics, malformed and overlong lines, a client
//! that never reads, a flood of connects and disconnects, and a clean stop.
//! Every test runs against `thread2`, `thread` and `event`.

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use smtlab_chat::server::{self as chat, ChatConfig, ChatServer, Model};

const WAIT: Duration = Duration::from_secs(10);

fn server(model: Model, tweak: impl FnOnce(&mut ChatConfig)) -> ChatServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut config = ChatConfig::new(model, 2);
    tweak(&mut config);
    chat::start(&config, listener).unwrap()
}

/// A raw IRC client: lines out, lines in.
struct Client {
    out: TcpStream,
    input: BufReader<TcpStream>,
    nick: String,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let out = TcpStream::connect(addr).unwrap();
        out.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let input = BufReader::new(out.try_clone().unwrap());
        Client {
            out,
            input,
            nick: String::new(),
        }
    }

    /// Connects and registers as `nick`, waiting for the welcome (001) and
    /// the end of it (422: no MOTD).
    fn register(addr: SocketAddr, nick: &str) -> Client {
        let mut c = Client::connect(addr);
        c.nick = nick.to_string();
        c.send(&format!("NICK {nick}"));
        c.send(&format!("USER {nick} 0 * :Test {nick}"));
        let welcome = c.expect(|l| l.contains(" 001 "));
        assert!(
            welcome.contains(&format!("{nick}!{nick}@127.0.0.1")),
            "{welcome}"
        );
        c.expect(|l| l.contains(" 422 "));
        c
    }

    fn send(&mut self, line: &str) {
        self.out
            .write_all(format!("{line}\r\n").as_bytes())
            .unwrap();
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.out.write_all(bytes).unwrap();
    }

    /// The next line, or `None` after `within`.
    fn line(&mut self, within: Duration) -> Option<String> {
        let end = Instant::now() + within;
        let mut line = String::new();
        loop {
            match self.input.read_line(&mut line) {
                Ok(0) => return None,
                Ok(_) if line.ends_with('\n') => {
                    return Some(line.trim_end_matches(['\r', '\n']).to_string())
                }
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return None,
            }
            if Instant::now() > end {
                return None;
            }
        }
    }

    /// Reads lines until one matches (answering nothing); panics after
    /// [`WAIT`] with what was seen.
    fn expect(&mut self, pred: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + WAIT;
        let mut seen = Vec::new();
        while Instant::now() < end {
            match self.line(Duration::from_millis(500)) {
                Some(l) if pred(&l) => return l,
                Some(l) => seen.push(l),
                None => {}
            }
        }
        panic!(
            "{}: no expected line within {WAIT:?}; saw {seen:?}",
            self.nick
        );
    }

    /// Joins `chan` and reads up to the end of its NAMES (366).
    fn join(&mut self, chan: &str) -> Vec<String> {
        self.send(&format!("JOIN {chan}"));
        let mut lines = vec![self.expect(|l| l.contains(" JOIN "))];
        lines.push(self.expect(|l| l.contains(" 366 ")));
        lines
    }
}

fn each_model(test: impl Fn(Model)) {
    for model in Model::ALL {
        eprintln!("model {model}");
        test(model);
    }
}

#[test]
fn two_clients_join_a_channel_and_see_each_others_messages() {
    each_model(|model| {
        let s = server(model, |_| {});
        let mut a = Client::register(s.addr(), "alice");
        let mut b = Client::register(s.addr(), "bob");
        a.join("#room");
        b.send("JOIN #room");
        // Alice sees Bob join; Bob gets the names with both.
        let joined = a.expect(|l| l.contains(" JOIN "));
        assert_eq!(joined, ":bob!bob@127.0.0.1 JOIN #room");
        let names = b.expect(|l| l.contains(" 353 "));
        assert!(names.ends_with(":alice bob"), "{names}");
        b.expect(|l| l.contains(" 366 "));
        a.send("PRIVMSG #room :hello bob");
        assert_eq!(
            b.expect(|l| l.contains("PRIVMSG")),
            ":alice!alice@127.0.0.1 PRIVMSG #room :hello bob"
        );
        b.send("privmsg #ROOM :hi alice, yes: spaces  kept");
        assert_eq!(
            a.expect(|l| l.contains("PRIVMSG")),
            ":bob!bob@127.0.0.1 PRIVMSG #ROOM :hi alice, yes: spaces  kept"
        );
        // No echo to the sender: Alice's next line is the PONG.
        a.send("PING :token-1");
        let next = a.line(WAIT).unwrap();
        assert_eq!(
            next, ":smtlab.chat PONG smtlab.chat :token-1",
            "model {model}"
        );
        // A private message.
        a.send("PRIVMSG bob :just you");
        assert_eq!(
            b.expect(|l| l.contains("PRIVMSG")),
            ":alice!alice@127.0.0.1 PRIVMSG bob :just you"
        );
        let stats = s.stats();
        assert_eq!(stats.counters.messages_in, 3);
        assert_eq!(stats.counters.deliveries, 3);
        assert_eq!(stats.counters.open, 2);
        assert_eq!(stats.channels, 1);
        s.stop().unwrap();
    });
}

#[test]
fn numerics_for_every_mistake() {
    each_model(|model| {
        let s = server(model, |_| {});
        let mut c = Client::connect(s.addr());
        c.nick = "early".into();
        c.send("JOIN #x");
        c.expect(|l| l.contains(" 451 * :You have not registered"));
        c.send("FROB x");
        c.expect(|l| l.contains(" 421 * FROB :Unknown command"));
        c.send("NICK 9bad");
        c.expect(|l| l.contains(" 432 * 9bad :Erroneous nickname"));
        c.send("NICK");
        c.expect(|l| l.contains(" 431 "));
        c.send("USER onlyone");
        c.expect(|l| l.contains(" 461 * USER :Not enough parameters"));
        let _holder = Client::register(s.addr(), "taken");
        c.send("NICK Taken");
        c.expect(|l| l.contains(" 433 * Taken :Nickname is already in use"));
        c.send("NICK carol");
        c.send("USER carol 0 * :Carol");
        c.expect(|l| l.contains(" 001 carol "));
        c.send("USER carol 0 * :Again");
        c.expect(|l| l.contains(" 462 "));
        c.send("PRIVMSG nobody :hi");
        c.expect(|l| l.contains(" 401 carol nobody "));
        c.send("PRIVMSG");
        c.expect(|l| l.contains(" 411 "));
        c.send("PRIVMSG taken");
        c.expect(|l| l.contains(" 412 "));
        c.send("PART #nowhere");
        c.expect(|l| l.contains(" 403 carol #nowhere "));
        c.send("JOIN nochan");
        c.expect(|l| l.contains(" 403 carol nochan "));
        c.send("PING");
        c.expect(|l| l.contains(" 409 "));
        let mut d = Client::register(s.addr(), "dave");
        d.join("#d");
        c.send("PRIVMSG #d :not a member");
        c.expect(|l| l.contains(" 404 carol #d "));
        c.send("PART #d");
        c.expect(|l| l.contains(" 442 carol #d "));
        c.send("MODE #d");
        c.expect(|l| l.contains(" 324 carol #d +n"));
        s.stop().unwrap();
    });
}

#[test]
fn malformed_and_overlong_lines_leave_the_others_served() {
    each_model(|model| {
        let s = server(model, |_| {});
        let mut a = Client::register(s.addr(), "alice");
        let mut b = Client::register(s.addr(), "bob");
        a.join("#r");
        b.join("#r");
        let mut bad = Client::register(s.addr(), "bad");
        bad.join("#r");
        // Empty lines, a prefix alone, binary junk, a bare LF, a line of
        // 600 bytes and one of 100 KB without an end for a while.
        bad.send_raw(b"\r\n\r\n   \r\n:prefix.only\r\n\x00\x01\xff\xfe garbage\r\n");
        bad.send_raw(format!("PRIVMSG #r :{}\r\n", "x".repeat(600)).as_bytes());
        bad.expect(|l| l.contains(" 417 "));
        bad.send_raw(&vec![b'y'; 100_000]);
        bad.send_raw(b"\r\nPRIVMSG #r :after the junk\n");
        bad.expect(|l| l.contains(" 417 "));
        // The junk's first word was answered as an unknown command; the
        // overlong lines reached nobody; the good line after them did.
        let got = a.expect(|l| l.contains("PRIVMSG"));
        assert_eq!(got, ":bad!bad@127.0.0.1 PRIVMSG #r :after the junk");
        b.send("PRIVMSG #r :still here");
        assert!(a.expect(|l| l.contains("PRIVMSG")).ends_with(":still here"));
        assert_eq!(s.stats().counters.open, 3);
        s.stop().unwrap();
    });
}

#[test]
fn a_client_that_never_reads_is_disconnected_and_the_room_goes_on() {
    each_model(|model| {
        let s = server(model, |_| {});
        let mut a = Client::register(s.addr(), "alice");
        let mut b = Client::register(s.addr(), "bob");
        let mut dead = Client::register(s.addr(), "dead");
        // Small receive buffer so the server's socket fills soon.
        let _ = nix::sys::socket::setsockopt(&dead.out, nix::sys::socket::sockopt::RcvBuf, &4096);
        a.join("#r");
        b.join("#r");
        dead.join("#r");
        // Alice talks; Bob reads every line (in a thread of his own); the
        // dead client reads none.
        let text = "z".repeat(400);
        let started = Instant::now();
        // Past what the kernel buffers of the dead connection hold (the
        // server's send buffer grows to tcp_wmem's 4 MiB).
        let total = 15_000;
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen2 = seen.clone();
        let reader = std::thread::spawn(move || {
            let mut got = 0;
            let mut quit = None;
            while got < total || quit.is_none() {
                match b.line(WAIT) {
                    Some(l) if l.contains("PRIVMSG") => {
                        got += 1;
                        seen2.store(got, std::sync::atomic::Ordering::Relaxed);
                    }
                    Some(l) if l.contains(" QUIT ") => quit = Some(l),
                    Some(_) => {}
                    None => break,
                }
            }
            (got, quit)
        });
        // In bursts of 50, each sent once Bob has the one before: a fast
        // reader keeps up, the dead one falls behind by the whole stream.
        for i in 0..total {
            a.send(&format!("PRIVMSG #r :{i} {text}"));
            if i % 50 == 49 {
                let end = Instant::now() + WAIT;
                while seen.load(std::sync::atomic::Ordering::Relaxed) < i + 1 - 50 {
                    assert!(Instant::now() < end, "{model}: bob stopped receiving");
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        let (got, quit) = reader.join().unwrap();
        assert_eq!(got, total, "{model}: bob's messages");
        // Bob saw the dead client leave with the reason.
        assert_eq!(
            quit.as_deref(),
            Some(":dead!dead@127.0.0.1 QUIT :SendQ exceeded"),
            "{model}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{model}: {:?}",
            started.elapsed()
        );
        let stats = s.stats();
        assert_eq!(stats.counters.send_queue_closes, 1, "{model}: {stats:?}");
        assert_eq!(stats.closes.get("SendQ exceeded"), Some(&1), "{stats:?}");
        drop(dead);
        s.stop().unwrap();
    });
}

#[test]
fn a_flood_of_connects_and_disconnects_leaves_the_server_serving() {
    each_model(|model| {
        let s = server(model, |_| {});
        let mut a = Client::register(s.addr(), "alice");
        let mut b = Client::register(s.addr(), "bob");
        a.join("#r");
        b.join("#r");
        for i in 0..300 {
            let mut c = TcpStream::connect(s.addr()).unwrap();
            match i % 4 {
                // Gone at once.
                0 => {}
                // Half a registration.
                1 => c.write_all(b"NICK half").unwrap(),
                // Registered and in the room, then cut off without QUIT.
                2 => c
                    .write_all(format!("NICK f{i}\r\nUSER f 0 * :f\r\nJOIN #r\r\n").as_bytes())
                    .unwrap(),
                // Reset instead of a close.
                _ => {
                    let _ = nix::sys::socket::setsockopt(
                        &c,
                        nix::sys::socket::sockopt::Linger,
                        &nix::libc::linger {
                            l_onoff: 1,
                            l_linger: 0,
                        },
                    );
                }
            }
            let _ = c.shutdown(Shutdown::Both);
        }
        // The room still works, and every flood connection is gone.
        a.send("PRIVMSG #r :after the flood");
        let got = b.expect(|l| l.contains("PRIVMSG"));
        assert!(got.ends_with(":after the flood"));
        let end = Instant::now() + WAIT;
        let settled = |c: chat::ChatSnapshot| c.open == 2 && c.accepted == 302;
        while !settled(s.stats().counters) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
        let stats = s.stats();
        assert_eq!(stats.counters.open, 2, "{model}: {stats:?}");
        assert_eq!(stats.counters.accepted, 302, "{model}");
        assert_eq!(stats.counters.registered, 2, "{model}");
        s.stop().unwrap();
    });
}

#[test]
fn quit_part_and_nick_are_told_to_the_room() {
    each_model(|model| {
        let s = server(model, |_| {});
        let mut a = Client::register(s.addr(), "alice");
        let mut b = Client::register(s.addr(), "bob");
        a.join("#r");
        b.join("#r");
        a.expect(|l| l.contains("bob") && l.contains(" JOIN "));
        b.send("NICK robert");
        assert_eq!(
            b.expect(|l| l.contains(" NICK ")),
            ":bob!bob@127.0.0.1 NICK :robert"
        );
        assert_eq!(
            a.expect(|l| l.contains(" NICK ")),
            ":bob!bob@127.0.0.1 NICK :robert"
        );
        b.send("PART #r :bye now");
        assert_eq!(
            a.expect(|l| l.contains(" PART ")),
            ":robert!bob@127.0.0.1 PART #r :bye now"
        );
        b.join("#r");
        b.send("QUIT :gone fishing");
        assert!(b
            .expect(|l| l.starts_with("ERROR"))
            .contains("Quit: gone fishing"));
        assert_eq!(
            a.expect(|l| l.contains(" QUIT ")),
            ":robert!bob@127.0.0.1 QUIT :Quit: gone fishing"
        );
        // The nickname is free again.
        let _b2 = Client::register(s.addr(), "robert");
        s.stop().unwrap();
    });
}

/// WHO shows each member with the user and host of its prefix and the
/// real name of its USER (real clients, weechat among them, take the user
/// and host they show from WHO): once it said `~u` and `smtlab` for all.
#[test]
fn who_shows_each_member_as_its_prefix_and_real_name() {
    each_model(|model| {
        let s = server(model, |_| {});
        let mut a = Client::register(s.addr(), "alice");
        let mut b = Client::register(s.addr(), "bob");
        a.join("#r");
        b.join("#r");
        b.send("NICK robert");
        // Alice's copy of the NICK too, so that nothing else is on its way
        // to her when she asks.
        a.expect(|l| l.contains(" NICK :robert"));
        a.send("WHO #r");
        let mut who = Vec::new();
        while who.last().is_none_or(|l: &String| !l.contains(" 315 ")) {
            who.push(a.expect(|l| l.contains(" 352 ") || l.contains(" 315 ")));
        }
        assert_eq!(
            who,
            [
                ":smtlab.chat 352 alice #r alice 127.0.0.1 smtlab.chat alice H :0 Test alice",
                ":smtlab.chat 352 alice #r bob 127.0.0.1 smtlab.chat robert H :0 Test bob",
                ":smtlab.chat 315 alice #r :End of WHO list",
            ],
            "model {model}"
        );
        // A nickname, exactly (its channel `*`); one not in use, or taken
        // before USER, lists nobody.
        a.send("WHO Robert");
        assert_eq!(
            a.expect(|l| l.contains(" 352 ")),
            ":smtlab.chat 352 alice * bob 127.0.0.1 smtlab.chat robert H :0 Test bob"
        );
        a.expect(|l| l.contains(" 315 alice Robert "));
        let mut early = Client::connect(s.addr());
        early.send("NICK early");
        early.send("PING :sync");
        early.expect(|l| l.contains(" PONG "));
        for mask in ["early", "nobody", "#none"] {
            a.send(&format!("WHO {mask}"));
            let next = a.line(WAIT).unwrap();
            assert_eq!(
                next,
                format!(":smtlab.chat 315 alice {mask} :End of WHO list"),
                "model {model}"
            );
        }
        s.stop().unwrap();
    });
}

#[test]
fn stop_closes_every_connection_and_joins_every_thread() {
    each_model(|model| {
        let s = server(model, |_| {});
        let mut clients: Vec<Client> = (0..20)
            .map(|i| Client::register(s.addr(), &format!("c{i}")))
            .collect();
        for c in &mut clients {
            c.join("#all");
        }
        // thread2: a reader and a writer per connection and the acceptor;
        // thread: one per connection and the acceptor; event: its 2 loops.
        let expected = match model {
            Model::Thread2 => 41,
            Model::Thread => 21,
            Model::Event => 2,
        };
        assert_eq!(s.stats().threads, expected, "{model}");
        let started = Instant::now();
        s.stop().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{model}: stop took {:?}",
            started.elapsed()
        );
        for c in &mut clients {
            // The server closed the socket: the stream ends.
            let end = Instant::now() + WAIT;
            while c.line(Duration::from_millis(100)).is_some() {
                assert!(Instant::now() < end, "{model}: a connection stayed open");
            }
        }
    });
}
