//! The chat server against hostile but ordinary clients (issue 29), in
//! each of its three models: a corpus of raw lines with the exact replies
//! expected (registration edge cases, names, line ends, NUL, bytes that
//! are not UTF-8, overlong lines, QUIT), and the back-pressure cases: a
//! burst reaches a member who reads, pipelined commands are all answered,
//! a member who never reads is closed with its `ERROR` line while the room
//! goes on, and every close says why.
//!
//! To add a corpus case, add a [`Case`] to [`corpus`]: what the hostile
//! client sends in one write, and the lines it and a witness in its
//! channel must then receive, exactly and in order.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use smtlab_chat::server::{self as chat, ChatConfig, ChatServer, Model};

const WAIT: Duration = Duration::from_secs(20);

fn server(model: Model, tweak: impl FnOnce(&mut ChatConfig)) -> ChatServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut config = ChatConfig::new(model, 1);
    tweak(&mut config);
    chat::start(&config, listener).unwrap()
}

/// A raw IRC client: bytes out, lines (as bytes, CR LF removed) in.
struct Client {
    out: TcpStream,
    input: BufReader<TcpStream>,
    /// A line read in part when a read timed out.
    partial: Vec<u8>,
    name: String,
}

impl Client {
    fn connect(addr: SocketAddr, name: &str) -> Client {
        let out = TcpStream::connect(addr).unwrap();
        out.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let input = BufReader::with_capacity(64 << 10, out.try_clone().unwrap());
        Client {
            out,
            input,
            partial: Vec::new(),
            name: name.to_string(),
        }
    }

    /// Connects and registers as `nick`, reading up to the end of the
    /// welcome (422: no MOTD).
    fn register(addr: SocketAddr, nick: &str) -> Client {
        let mut c = Client::connect(addr, nick);
        c.send(format!("NICK {nick}\r\nUSER {nick} 0 * :{nick}\r\n").as_bytes());
        c.until(|l| l.contains(" 422 "));
        c
    }

    fn send(&mut self, bytes: &[u8]) {
        self.out.write_all(bytes).unwrap();
    }

    /// The next line; `Err(true)` at the end of the stream, `Err(false)`
    /// when none came within `within`.
    fn line(&mut self, within: Duration) -> Result<String, bool> {
        self.line_bytes(within)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    fn line_bytes(&mut self, within: Duration) -> Result<Vec<u8>, bool> {
        let end = Instant::now() + within;
        loop {
            match self.input.read_until(b'\n', &mut self.partial) {
                Ok(0) => return Err(true),
                Ok(_) if self.partial.ends_with(b"\n") => {
                    let mut line = std::mem::take(&mut self.partial);
                    line.pop();
                    if line.ends_with(b"\r") {
                        line.pop();
                    }
                    return Ok(line);
                }
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return Err(true),
            }
            if Instant::now() > end {
                return Err(false);
            }
        }
    }

    /// Reads lines until one matches; panics after [`WAIT`] with what was
    /// seen.
    fn until(&mut self, pred: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + WAIT;
        let mut seen = Vec::new();
        while Instant::now() < end {
            match self.line(Duration::from_millis(200)) {
                Ok(l) if pred(&l) => return l,
                Ok(l) => seen.push(l),
                Err(true) => break,
                Err(false) => {}
            }
        }
        panic!("{}: no expected line; saw {seen:?}", self.name);
    }

    /// Every line up to the end of the stream (within [`WAIT`]).
    fn read_to_end_of_stream(&mut self) -> Vec<Vec<u8>> {
        let end = Instant::now() + WAIT;
        let mut lines = Vec::new();
        loop {
            match self.line_bytes(Duration::from_millis(200)) {
                Ok(l) => lines.push(l),
                Err(true) => return lines,
                Err(false) => assert!(
                    Instant::now() < end,
                    "{}: the stream did not end; last lines {:?}",
                    self.name,
                    last(&lines)
                ),
            }
        }
    }
}

fn last(lines: &[Vec<u8>]) -> Vec<String> {
    lines
        .iter()
        .rev()
        .take(3)
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect()
}

fn each_model(test: impl Fn(Model)) {
    for model in Model::ALL {
        eprintln!("model {model}");
        test(model);
    }
}

// ---------------------------------------------------------------------
// The corpus.

/// Where the hostile client `h` stands when its bytes are sent. A witness
/// `wit[ness]` is always registered and on `#r`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Start {
    /// Connected, nothing sent.
    Fresh,
    /// Registered as `h` (user `h`), on no channel.
    Registered,
    /// Registered as `h` and on `#r` with the witness.
    InRoom,
}

struct Case {
    name: &'static str,
    start: Start,
    /// Sent in one write.
    send: &'static [u8],
    /// What `h` receives, in order and nothing else: a line, or a prefix
    /// ending in `*`.
    replies: &'static [&'static [u8]],
    /// What the witness receives from it, the same way.
    room: &'static [&'static [u8]],
    /// `h` is closed after its replies (which end with its ERROR line).
    closes: bool,
}

const fn case(
    name: &'static str,
    start: Start,
    send: &'static [u8],
    replies: &'static [&'static [u8]],
) -> Case {
    Case {
        name,
        start,
        send,
        replies,
        room: &[],
        closes: false,
    }
}

const WELCOME_U: &[&[u8]] = &[
    b":smtlab.chat 001 h :Welcome to the Internet Relay Network h!u@127.0.0.1",
    b":smtlab.chat 002 h :Your host is smtlab.chat, running smtlab-chat *",
    b":smtlab.chat 003 h :This server was created *",
    b":smtlab.chat 004 h smtlab.chat smtlab-chat-*",
    b":smtlab.chat 005 h CHANTYPES=#& CASEMAPPING=rfc1459 NICKLEN=30 CHANNELLEN=50 *",
    b":smtlab.chat 422 h :MOTD File is missing",
];

// The corpus is a table, one case per entry, read top to bottom.
#[allow(clippy::too_many_lines)]
fn corpus() -> Vec<Case> {
    use Start::*;
    vec![
        // Registration.
        case("NICK then USER", Fresh, b"NICK h\r\nUSER u 0 * :U\r\n", WELCOME_U),
        case("USER then NICK", Fresh, b"USER u 0 * :U\r\nNICK h\r\n", WELCOME_U),
        case(
            "USER with too few parameters",
            Fresh,
            b"USER u 0 *\r\n",
            &[b":smtlab.chat 461 * USER :Not enough parameters"],
        ),
        case(
            "USER with an empty user name",
            Fresh,
            b"USER : 0 * x\r\n",
            &[b":smtlab.chat 461 * USER :Not enough parameters"],
        ),
        case(
            "NICK without a nickname",
            Fresh,
            b"NICK\r\nNICK :\r\n",
            &[
                b":smtlab.chat 431 * :No nickname given",
                b":smtlab.chat 431 * :No nickname given",
            ],
        ),
        case(
            "a nickname in use, in another case (rfc1459 folding)",
            Fresh,
            b"NICK wit[ness]\r\nNICK WIT{NESS}\r\n",
            &[
                b":smtlab.chat 433 * wit[ness] :Nickname is already in use",
                b":smtlab.chat 433 * WIT{NESS} :Nickname is already in use",
            ],
        ),
        case(
            "a nickname of 31 bytes is refused, 30 is taken",
            Fresh,
            b"NICK abcdefghijabcdefghijabcdefghijk\r\nNICK abcdefghijabcdefghijabcdefghij\r\nPING :t\r\n",
            &[
                b":smtlab.chat 432 * abcdefghijabcdefghijabcdefghijk :Erroneous nickname",
                b":smtlab.chat PONG smtlab.chat :t",
            ],
        ),
        case(
            "a nickname starting with a digit or holding a dot",
            Fresh,
            b"NICK 9lives\r\nNICK a.b\r\n",
            &[
                b":smtlab.chat 432 * 9lives :Erroneous nickname",
                b":smtlab.chat 432 * a.b :Erroneous nickname",
            ],
        ),
        case(
            "commands before registration",
            Fresh,
            b"JOIN #r\r\nPRIVMSG #r :x\r\nFROB\r\n",
            &[
                b":smtlab.chat 451 * :You have not registered",
                b":smtlab.chat 451 * :You have not registered",
                b":smtlab.chat 421 * FROB :Unknown command",
            ],
        ),
        case(
            "USER again after registration",
            Registered,
            b"USER h 0 * :again\r\n",
            &[b":smtlab.chat 462 h :Unauthorized command (already registered)"],
        ),
        // PING and PONG.
        case(
            "PING before registration, and without a token",
            Fresh,
            b"PING :x y\r\nPING\r\nPONG :whatever\r\n",
            &[
                b":smtlab.chat PONG smtlab.chat :x y",
                b":smtlab.chat 409 * :No origin specified",
            ],
        ),
        // Line ends and lines that are not commands.
        case(
            "LF alone ends a line",
            Fresh,
            b"PING a\nPING b\n",
            &[
                b":smtlab.chat PONG smtlab.chat :a",
                b":smtlab.chat PONG smtlab.chat :b",
            ],
        ),
        case(
            // As ngircd (and mIRC, BitchX): a lone CR ends a line too.
            "CR alone ends a line",
            Fresh,
            b"PING a\rPING b\r",
            &[
                b":smtlab.chat PONG smtlab.chat :a",
                b":smtlab.chat PONG smtlab.chat :b",
            ],
        ),
        case(
            "empty lines, spaces, a prefix alone",
            Fresh,
            b"\r\n\n\r   \r\n:prefix.only\r\n:pre  \r\n",
            &[],
        ),
        case(
            "a line of 513 bytes is refused, 512 is relayed",
            InRoom,
            leak(
                format!("PRIVMSG #r :{}\r\nPRIVMSG #r :{}\r\n", "x".repeat(499), "x".repeat(498))
                    .into_bytes(),
            ),
            &[b":smtlab.chat 417 h :Input line was too long"],
        )
        .room(leak_all(vec![format!(":h!h@127.0.0.1 PRIVMSG #r :{}", "x".repeat(498)).into_bytes()])),
        // NUL (RFC 2812 §2.3.1: no NUL in a message): the line is dropped,
        // as ngircd never handles one; the lines after it are.
        case(
            "NUL in a message is not relayed",
            InRoom,
            b"PRIVMSG #r :a\0b\r\nPRIVMSG wit[ness] :\0\r\nPRIVMSG #r :after\r\n",
            &[],
        )
        .room(&[b":h!h@127.0.0.1 PRIVMSG #r :after"]),
        case(
            "NUL in a registration line is not taken",
            Fresh,
            b"NICK a\0b\r\nNICK \0\r\nPING :t\r\n",
            &[b":smtlab.chat PONG smtlab.chat :t"],
        ),
        // Bytes that are not UTF-8.
        case(
            "text that is not UTF-8 is relayed byte for byte",
            InRoom,
            b"PRIVMSG #r :caf\xe9 \xff\xfe\x01\r\n",
            &[],
        )
        .room(&[b":h!h@127.0.0.1 PRIVMSG #r :caf\xe9 \xff\xfe\x01"]),
        case(
            // A name the server could not echo unchanged is refused, not
            // mangled.
            "a channel name that is not UTF-8",
            Registered,
            b"JOIN #caf\xe9\r\n",
            &[b":smtlab.chat 403 h #caf\xef\xbf\xbd :No such channel"],
        ),
        case(
            "a command that is not UTF-8",
            Fresh,
            b"\xff\xfe x\r\n",
            &[b":smtlab.chat 421 * \xef\xbf\xbd\xef\xbf\xbd :Unknown command"],
        ),
        // Channels.
        case(
            "bad channel names",
            Registered,
            b"JOIN r\r\nJOIN #\r\nJOIN #a\x07b\r\nJOIN #a:b\r\nJOIN #abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij\r\n",
            &[
                b":smtlab.chat 403 h r :No such channel",
                b":smtlab.chat 403 h # :No such channel",
                b":smtlab.chat 403 h #a\x07b :No such channel",
                b":smtlab.chat 403 h #a:b :No such channel",
                b":smtlab.chat 403 h #abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij :No such channel",
            ],
        ),
        case(
            "JOIN without a channel",
            Registered,
            b"JOIN\r\n",
            &[b":smtlab.chat 461 h JOIN :Not enough parameters"],
        ),
        case(
            "JOIN 0 leaves every channel",
            InRoom,
            b"JOIN 0\r\n",
            &[b":h!h@127.0.0.1 PART #r"],
        )
        .room(&[b":h!h@127.0.0.1 PART #r"]),
        case(
            "JOIN of a channel already joined says nothing",
            InRoom,
            b"JOIN #R\r\n",
            &[],
        ),
        // Messages.
        case(
            "PRIVMSG to a nickname or a channel that does not exist",
            Registered,
            b"PRIVMSG nobody :x\r\nPRIVMSG #nowhere :x\r\nPRIVMSG #r :x\r\n",
            &[
                b":smtlab.chat 401 h nobody :No such nick/channel",
                b":smtlab.chat 403 h #nowhere :No such channel",
                b":smtlab.chat 404 h #r :Cannot send to channel",
            ],
        ),
        case(
            "PRIVMSG without a target or a text",
            InRoom,
            b"PRIVMSG\r\nPRIVMSG #r\r\nPRIVMSG #r :\r\n",
            &[
                b":smtlab.chat 411 h :No recipient given (PRIVMSG)",
                b":smtlab.chat 412 h :No text to send",
                b":smtlab.chat 412 h :No text to send",
            ],
        ),
        case(
            "NOTICE is never answered",
            InRoom,
            b"NOTICE nobody :x\r\nNOTICE #nowhere :x\r\nNOTICE\r\nNOTICE #r :n\r\n",
            &[],
        )
        .room(&[b":h!h@127.0.0.1 NOTICE #r :n"]),
        case(
            "PART of a channel not joined, and of one that does not exist",
            Registered,
            b"PART #r\r\nPART #nowhere\r\nPART\r\n",
            &[
                b":smtlab.chat 442 h #r :You're not on that channel",
                b":smtlab.chat 403 h #nowhere :No such channel",
                b":smtlab.chat 461 h PART :Not enough parameters",
            ],
        ),
        // QUIT.
        case(
            "QUIT with a message",
            InRoom,
            b"QUIT :gone fishing\r\nPRIVMSG #r :after quit\r\n",
            &[b"ERROR :Closing Link: 127.0.0.1 (Quit: gone fishing)"],
        )
        .room(&[b":h!h@127.0.0.1 QUIT :Quit: gone fishing"])
        .closes(),
        case(
            "QUIT before registration",
            Fresh,
            b"QUIT\r\n",
            &[b"ERROR :Closing Link: 127.0.0.1 (Client Quit)"],
        )
        .closes(),
    ]
}

/// A generated case's bytes, for the life of the test.
fn leak(bytes: Vec<u8>) -> &'static [u8] {
    Box::leak(bytes.into_boxed_slice())
}

fn leak_all(lines: Vec<Vec<u8>>) -> &'static [&'static [u8]] {
    Box::leak(
        lines
            .into_iter()
            .map(leak)
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    )
}

impl Case {
    fn room(mut self, room: &'static [&'static [u8]]) -> Case {
        self.room = room;
        self
    }

    fn closes(mut self) -> Case {
        self.closes = true;
        self
    }
}

fn matches(pattern: &[u8], line: &[u8]) -> bool {
    match pattern.strip_suffix(b"*") {
        Some(prefix) => line.starts_with(prefix),
        None => line == pattern,
    }
}

fn show(b: &[u8]) -> String {
    b.escape_ascii().to_string()
}

/// Compares what came with what was expected; `None` when they agree.
fn differs(who: &str, expected: &[&[u8]], got: &[Vec<u8>]) -> Option<String> {
    let agree = expected.len() == got.len()
        && expected
            .iter()
            .zip(got)
            .all(|(pattern, line)| matches(pattern, line));
    (!agree).then(|| {
        format!(
            "{who} expected {:?}\n  {who} got {:?}",
            expected.iter().map(|e| show(e)).collect::<Vec<_>>(),
            got.iter().map(|g| show(g)).collect::<Vec<_>>()
        )
    })
}

/// Lines of `c` up to the one `end` matches (not included).
fn lines_until(c: &mut Client, end: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let deadline = Instant::now() + WAIT;
    let mut got = Vec::new();
    loop {
        match c.line_bytes(Duration::from_millis(200)) {
            Ok(l) if l == end => return Ok(got),
            Ok(l) => got.push(l),
            Err(true) => return Err(format!("{}: closed; got {:?}", c.name, last(&got))),
            Err(false) if Instant::now() > deadline => {
                return Err(format!(
                    "{}: no {}; got {:?}",
                    c.name,
                    show(end),
                    last(&got)
                ))
            }
            Err(false) => {}
        }
    }
}

/// One case against a fresh server; `Err` says how it differed.
fn run_case(model: Model, case: &Case) -> Result<(), String> {
    let s = server(model, |_| {});
    let addr = s.addr();
    let mut wit = Client::register(addr, "wit[ness]");
    wit.send(b"JOIN #r\r\n");
    wit.until(|l| l.contains(" 366 "));
    let mut h = match case.start {
        Start::Fresh => Client::connect(addr, "h"),
        Start::Registered | Start::InRoom => Client::register(addr, "h"),
    };
    if case.start == Start::InRoom {
        h.send(b"JOIN #r\r\n");
        h.until(|l| l.contains(" 366 "));
        wit.until(|l| l.contains(" JOIN "));
    }
    h.send(case.send);
    let mut problems = Vec::new();
    // What h got: up to the answer to a PING sent after its bytes, or the
    // end of the stream when the case closes it.
    let got = if case.closes {
        h.read_to_end_of_stream()
    } else {
        h.send(b"PING :end-of-case\r\n");
        lines_until(&mut h, b":smtlab.chat PONG smtlab.chat :end-of-case")?
    };
    problems.extend(differs("h", case.replies, &got));
    // What the witness got from h: up to a line of a third client sent
    // after h's were handled.
    let mut third = Client::register(addr, "third");
    third.send(b"JOIN #r\r\nPRIVMSG #r :end-of-case\r\n");
    let mut room = lines_until(&mut wit, b":third!third@127.0.0.1 PRIVMSG #r :end-of-case")?;
    room.retain(|l| !l.starts_with(b":third!"));
    problems.extend(differs("witness", case.room, &room));
    s.stop().map_err(|e| e.to_string())?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n  "))
    }
}

#[test]
fn hostile_line_corpus_gets_the_expected_replies_in_every_model() {
    let mut failed = Vec::new();
    for model in Model::ALL {
        for case in corpus() {
            if let Err(why) = run_case(model, &case) {
                failed.push(format!("{model}: {}:\n  {why}", case.name));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

// ---------------------------------------------------------------------
// Back-pressure.

/// Reads `c` in a thread of its own, counting lines that contain
/// `needle`; returns the counter and the thread (which ends at the end of
/// the stream or once `stop` is set, giving every line it read).
fn reader(
    mut c: Client,
    needle: &'static str,
    stop: Arc<AtomicBool>,
) -> (
    Arc<AtomicUsize>,
    std::thread::JoinHandle<(Client, Vec<String>)>,
) {
    let count = Arc::new(AtomicUsize::new(0));
    let n = count.clone();
    let handle = std::thread::spawn(move || {
        let mut lines = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            match c.line(Duration::from_millis(100)) {
                Ok(l) => {
                    if l.contains(needle) {
                        n.fetch_add(1, Ordering::SeqCst);
                    }
                    lines.push(l);
                }
                Err(true) => break,
                Err(false) => {}
            }
        }
        (c, lines)
    });
    (count, handle)
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < end, "{what}: not within {WAIT:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The issue's case: alice writes 3,000 `PRIVMSG #r :mN` in one write
/// (about 44 KB) while bob reads; bob gets every one, in order, and nobody
/// is closed. At the default send queue and at a small one (4 KiB: a few
/// dozen lines), where the server must stop reading alice while bob's
/// output is full.
#[test]
fn a_burst_of_3000_lines_reaches_a_member_who_reads_whole() {
    each_model(|model| {
        // (send queue, workers, readers): two `event` loops with four
        // readers put some of them on the other loop than alice's.
        for (send_queue, workers, readers) in [
            (chat::DEFAULT_SEND_QUEUE, 1, 1),
            (4 << 10, 1, 1),
            (4 << 10, 2, 4),
        ] {
            let at = format!("{model} sq={send_queue} workers={workers}");
            let s = server(model, |c| {
                c.send_queue = send_queue;
                c.workers = workers;
            });
            let mut alice = Client::register(s.addr(), "alice");
            alice.send(b"JOIN #r\r\n");
            alice.until(|l| l.contains(" 366 "));
            let stop = Arc::new(AtomicBool::new(false));
            let reading: Vec<_> = (0..readers)
                .map(|k| {
                    let mut bob = Client::register(s.addr(), &format!("bob{k}"));
                    bob.send(b"JOIN #r\r\n");
                    bob.until(|l| l.contains(" 366 "));
                    reader(bob, "PRIVMSG", stop.clone())
                })
                .collect();
            let burst: String = (0..3000).map(|i| format!("PRIVMSG #r :m{i}\r\n")).collect();
            assert!(burst.len() > 40_000);
            alice.send(burst.as_bytes());
            for (got, _) in &reading {
                wait_for(&format!("{at}: a reader's 3000 lines"), || {
                    got.load(Ordering::SeqCst) >= 3000
                });
            }
            stop.store(true, Ordering::SeqCst);
            // Kept open to the end.
            let mut bobs = Vec::new();
            for (_, bob_reads) in reading {
                let (bob, lines) = bob_reads.join().unwrap();
                let messages: Vec<&String> =
                    lines.iter().filter(|l| l.contains("PRIVMSG")).collect();
                for (i, l) in messages.iter().enumerate() {
                    assert_eq!(
                        **l,
                        format!(":alice!alice@127.0.0.1 PRIVMSG #r :m{i}"),
                        "{at}: {}",
                        bob.name
                    );
                }
                assert!(
                    !lines.iter().any(|l| l.starts_with("ERROR")),
                    "{at}: {:?}",
                    lines.iter().rev().take(3).collect::<Vec<_>>()
                );
                bobs.push(bob);
            }
            // Alice is still served.
            alice.send(b"PING :still\r\n");
            alice.until(|l| l.ends_with(" :still"));
            let stats = s.stats();
            assert_eq!(stats.counters.send_queue_closes, 0, "{at}: {stats:?}");
            assert_eq!(stats.counters.open, 1 + readers as u64, "{at}: {stats:?}");
            s.stop().unwrap();
        }
    });
}

/// A client that pipelines 1,000 JOINs in one write (and reads) gets every
/// reply and stays connected: the first 50 joined (JOIN, 353, 366), the
/// others refused (405, the channel limit).
#[test]
fn pipelined_1000_joins_are_all_answered_and_the_client_stays() {
    each_model(|model| {
        for send_queue in [chat::DEFAULT_SEND_QUEUE, 4 << 10] {
            let s = server(model, |c| c.send_queue = send_queue);
            let mut c = Client::register(s.addr(), "joiner");
            let mut joins: String = (0..1000).map(|i| format!("JOIN #c{i}\r\n")).collect();
            joins.push_str("PING :all-sent\r\n");
            c.send(joins.as_bytes());
            let lines = lines_until(&mut c, b":smtlab.chat PONG smtlab.chat :all-sent")
                .unwrap_or_else(|e| panic!("{model} sq={send_queue}: {e}"));
            let lines: Vec<String> = lines
                .iter()
                .map(|l| String::from_utf8_lossy(l).into_owned())
                .collect();
            let count = |code: &str| lines.iter().filter(|l| l.contains(code)).count();
            assert_eq!(count(" JOIN #c"), 50, "{model} sq={send_queue}");
            assert_eq!(count(" 353 "), 50, "{model} sq={send_queue}");
            assert_eq!(count(" 366 "), 50, "{model} sq={send_queue}");
            assert_eq!(count(" 405 "), 950, "{model} sq={send_queue}");
            assert_eq!(lines.len(), 1100, "{model} sq={send_queue}");
            assert_eq!(
                lines[1099],
                ":smtlab.chat 405 joiner #c999 :You have joined too many channels"
            );
            assert_eq!(s.stats().counters.send_queue_closes, 0, "{model}");
            s.stop().unwrap();
        }
    });
}

/// A member who never reads is closed once its queue passes the bound, and
/// it is told so (`ERROR ... (SendQ exceeded)`, the last line it can read
/// when it reads again); the sender is held back at most a moment by it,
/// and the member who reads gets every line.
#[test]
fn a_member_who_never_reads_is_closed_with_its_error_line_and_the_room_goes_on() {
    each_model(|model| a_member_falls_behind(model, false));
}

/// A member who reads a trickle (100 bytes every 50 ms) cannot set the
/// room's pace: a sender waits for it a moment, not for as long as it
/// takes bytes, and it is closed like one who never reads.
#[test]
fn a_member_who_reads_a_trickle_does_not_set_the_rooms_pace() {
    each_model(|model| a_member_falls_behind(model, true));
}

fn a_member_falls_behind(model: Model, trickle: bool) {
    let s = server(model, |_| {});
    let mut alice = Client::register(s.addr(), "alice");
    let mut bob = Client::register(s.addr(), "bob");
    let mut dead = Client::register(s.addr(), "dead");
    for c in [&mut alice, &mut bob, &mut dead] {
        c.send(b"JOIN #r\r\n");
        c.until(|l| l.contains(" 366 "));
    }
    // Bob reads everything; once he sees the dead member leave, the
    // dead member starts reading (within the server's grace).
    let stop = Arc::new(AtomicBool::new(false));
    let gone = Arc::new(AtomicBool::new(false));
    let (got, bob_reads) = {
        let gone = gone.clone();
        let stop = stop.clone();
        let count = Arc::new(AtomicUsize::new(0));
        let n = count.clone();
        let handle = std::thread::spawn(move || {
            let mut lines = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                match bob.line(Duration::from_millis(100)) {
                    Ok(l) => {
                        if l.contains("PRIVMSG") {
                            n.fetch_add(1, Ordering::SeqCst);
                        } else if l == ":dead!dead@127.0.0.1 QUIT :SendQ exceeded" {
                            gone.store(true, Ordering::SeqCst);
                        }
                        lines.push(l);
                    }
                    Err(true) => break,
                    Err(false) => {}
                }
            }
            lines
        });
        (count, handle)
    };
    let dead_reads = {
        let gone = gone.clone();
        std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(60);
            let mut sip = [0u8; 100];
            let mut sipped = Vec::new();
            while !gone.load(Ordering::SeqCst) && Instant::now() < end {
                if trickle {
                    // From the socket itself, past the line buffer.
                    if let Ok(n) = (&dead.out).read(&mut sip) {
                        sipped.extend_from_slice(&sip[..n]);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                } else {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            // What was sipped, then the rest, as lines.
            let mut lines: Vec<Vec<u8>> = Vec::new();
            if let Some(cut) = sipped.iter().rposition(|&c| c == b'\n') {
                dead.partial = sipped.split_off(cut + 1);
                lines.extend(
                    sipped
                        .split(|&c| c == b'\n')
                        .map(|l| l.strip_suffix(b"\r").unwrap_or(l).to_vec()),
                );
                lines.pop();
            } else {
                dead.partial = sipped;
            }
            lines.extend(dead.read_to_end_of_stream());
            lines
        })
    };
    // More than the kernel holds for the dead member (the server's send
    // buffer grows to tcp_wmem's 4 MiB, its receive buffer holds 128
    // KiB), in one writer of its own: the server stops reading alice
    // while a recipient's queue is full.
    let total = 20_000;
    let text = "z".repeat(400);
    let started = Instant::now();
    let writer = std::thread::spawn(move || {
        for chunk in 0..total / 100 {
            let lines: String = (chunk * 100..chunk * 100 + 100)
                .map(|i| format!("PRIVMSG #r :{i} {text}\r\n"))
                .collect();
            alice.send(lines.as_bytes());
        }
        alice
    });
    wait_for(&format!("{model}: bob's {total} lines"), || {
        got.load(Ordering::SeqCst) >= total
    });
    let took = started.elapsed();
    let mut alice = writer.join().unwrap();
    // The sender waited for the dead member a moment, not for ever.
    assert!(took < Duration::from_secs(15), "{model}: {took:?}");
    let stats = s.stats();
    assert_eq!(stats.counters.send_queue_closes, 1, "{model}: {stats:?}");
    assert_eq!(stats.closes.get("SendQ exceeded"), Some(&1), "{stats:?}");
    // What the dead member read: whole lines, then why it was closed,
    // then the end.
    let lines = dead_reads.join().unwrap();
    assert_eq!(
        lines.last().map(|l| show(l)).as_deref(),
        Some("ERROR :Closing Link: 127.0.0.1 (SendQ exceeded)"),
        "{model}: {:?}",
        last(&lines)
    );
    for l in &lines[..lines.len() - 1] {
        assert!(
            l.starts_with(b":alice!alice@127.0.0.1 PRIVMSG #r :") && l.ends_with(b"zzz"),
            "{model}: a broken line {:?}",
            show(&l[..l.len().min(80)])
        );
    }
    // The room goes on.
    alice.send(b"PRIVMSG #r :after\r\n");
    wait_for(&format!("{model}: bob's last line"), || {
        got.load(Ordering::SeqCst) > total
    });
    stop.store(true, Ordering::SeqCst);
    let bob_lines = bob_reads.join().unwrap();
    assert!(gone.load(Ordering::SeqCst), "{model}");
    assert_eq!(
        bob_lines.last().map(String::as_str),
        Some(":alice!alice@127.0.0.1 PRIVMSG #r :after"),
        "{model}"
    );
    s.stop().unwrap();
}

/// Stopping the server closes every connection with an `ERROR` line first.
#[test]
fn every_close_sends_the_error_line_first_even_at_stop() {
    each_model(|model| {
        let s = server(model, |_| {});
        let mut a = Client::register(s.addr(), "a");
        let mut b = Client::connect(s.addr(), "b");
        b.send(b"NICK b\r\n");
        // Closed by the server: the connection's last line says why.
        let mut gone = Client::register(s.addr(), "gone");
        gone.out.shutdown(std::net::Shutdown::Write).unwrap();
        let lines = gone.read_to_end_of_stream();
        assert_eq!(
            lines.last().map(|l| show(l)).as_deref(),
            Some("ERROR :Closing Link: 127.0.0.1 (Connection closed)"),
            "{model}"
        );
        a.send(b"PING :x\r\n");
        a.until(|l| l.ends_with(":x"));
        s.stop().unwrap();
        for c in [&mut a, &mut b] {
            let lines = c.read_to_end_of_stream();
            assert_eq!(
                lines.last().map(|l| show(l)).as_deref(),
                Some("ERROR :Closing Link: 127.0.0.1 (Server stopping)"),
                "{model}: {}",
                c.name
            );
        }
    });
}
