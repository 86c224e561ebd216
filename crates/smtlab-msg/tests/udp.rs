//! Two ranks over real UDP on 127.0.0.1, each in its own thread, each
//! injecting 5% loss, 5% reordering and 2% duplication: 2,000 request/reply
//! exchanges of a page, one 100 KiB message, and a clean shutdown.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use smtlab_msg::{Config, Counters, Endpoint, Fault, SendError, UdpTransport, PAGE};

mod support;

const EXCHANGES: u32 = 2_000;
const BIG: usize = 100 * 1024;

/// One rank: its endpoint, its socket, and the messages it has been given.
struct Rank {
    endpoint: Endpoint,
    transport: UdpTransport,
    inbox: Vec<Vec<u8>>,
    started: Instant,
}

impl Rank {
    /// Serves the network — read, tick, flush owed acks, wait — until
    /// `done` holds.
    fn serve_until(&mut self, mut done: impl FnMut(&Rank) -> bool) {
        loop {
            let Rank {
                endpoint,
                transport,
                inbox,
                ..
            } = self;
            let peer = 1 - endpoint.rank();
            transport.drain(endpoint, &mut |from, m| {
                assert_eq!(from, peer);
                inbox.push(m.to_vec())
            });
            transport.tick(endpoint);
            if done(self) {
                return;
            }
            assert!(
                self.started.elapsed() < Duration::from_secs(25),
                "rank {} stuck: {:?}",
                self.endpoint.rank(),
                self.endpoint.counters()
            );
            self.transport.flush_acks(&mut self.endpoint);
            let wait = self
                .transport
                .until_deadline(&self.endpoint)
                .unwrap_or(Duration::from_millis(10))
                .min(Duration::from_millis(10));
            self.transport.wait_readable(wait).unwrap();
        }
    }

    /// Sends `msg` to `to`, serving the network while the window is full.
    fn send(&mut self, to: usize, msg: &[u8]) {
        loop {
            match self.transport.send(&mut self.endpoint, to, msg) {
                Ok(()) => return,
                Err(SendError::WindowFull) => {
                    let before = self.endpoint.in_flight(to);
                    self.serve_until(|r| r.endpoint.in_flight(to) < before);
                }
                Err(e) => panic!("send: {e}"),
            }
        }
    }

    fn next_message(&mut self) -> Vec<u8> {
        self.serve_until(|r| !r.inbox.is_empty());
        self.inbox.remove(0)
    }
}

fn request(i: u32) -> Vec<u8> {
    let mut m = vec![0; PAGE];
    m[..4].copy_from_slice(&i.to_be_bytes());
    for (j, b) in m.iter_mut().enumerate().skip(4) {
        *b = (i as usize * 17 + j) as u8;
    }
    m
}

fn reply_to(request: &[u8]) -> Vec<u8> {
    request.iter().rev().map(|b| b ^ 0x5a).collect()
}

fn checksum(m: &[u8]) -> u64 {
    m.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[test]
fn request_reply_over_lossy_udp_is_exact() {
    let transports: Vec<UdpTransport> = (0..2)
        .map(|_| UdpTransport::bind("127.0.0.1:0").unwrap())
        .collect();
    let addrs: Vec<_> = transports.iter().map(|t| t.local_addr().unwrap()).collect();
    let client_done = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for (rank, mut transport) in transports.into_iter().enumerate() {
        transport.set_peers(addrs.clone());
        let config = Config {
            fault: Fault {
                loss: 0.05,
                reorder: 0.05,
                duplicate: 0.02,
                seed: 42 + rank as u64,
            },
            ..Config::new(2)
        };
        let mut me = Rank {
            endpoint: Endpoint::new(rank, config).unwrap(),
            transport,
            inbox: Vec::new(),
            started: Instant::now(),
        };
        let client_done = Arc::clone(&client_done);
        threads.push(thread::spawn(move || {
            if rank == 0 {
                for i in 0..EXCHANGES {
                    let req = request(i);
                    me.send(1, &req);
                    let reply = me.next_message();
                    assert!(reply == reply_to(&req), "reply {i} is wrong");
                }
                let big: Vec<u8> = (0..BIG).map(|j| (j * 7 / 3) as u8).collect();
                me.send(1, &big);
                let reply = me.next_message();
                assert_eq!(reply, checksum(&big).to_be_bytes());
                me.send(1, b"bye");
                me.serve_until(|r| r.endpoint.idle());
                client_done.store(true, Ordering::SeqCst);
            } else {
                loop {
                    let msg = me.next_message();
                    if msg == b"bye" {
                        break;
                    }
                    if msg.len() == BIG {
                        me.send(0, &checksum(&msg).to_be_bytes());
                    } else {
                        me.send(0, &reply_to(&msg));
                    }
                }
                // Keep answering until the client has our ack of its bye.
                me.serve_until(|r| r.endpoint.idle() && client_done.load(Ordering::SeqCst));
            }
            assert!(me.inbox.is_empty());
            (me.endpoint.counters().clone(), me.transport.send_errors())
        }));
    }
    let results: Vec<(Counters, u64)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let (client, server) = (&results[0].0, &results[1].0);
    assert_eq!(client.messages_sent, u64::from(EXCHANGES) + 2);
    assert_eq!(server.messages_received, client.messages_sent);
    assert_eq!(server.messages_sent, u64::from(EXCHANGES) + 1);
    assert_eq!(client.messages_received, server.messages_sent);
    let mut total = client.clone();
    total.add(server);
    assert!(
        total.injected_drops > 0 && total.injected_reorders > 0 && total.injected_duplicates > 0
    );
    assert!(total.retransmissions > 0, "{total:?}");
    assert_eq!(total.strangers_dropped, 0);
    eprintln!(
        "counters of both ranks: {total:?}; send errors: {}",
        results[0].1 + results[1].1
    );
}

#[test]
fn receive_one_sleeps_until_a_datagram_or_its_timeout_and_drain_still_never_blocks() {
    let (mut t, mut e) = support::udp_pair();
    let mut got: Vec<Vec<u8>> = Vec::new();

    // Nothing comes: it gives up after its timeout, not before and not
    // much after (a read timeout counts in scheduler ticks).
    let started = Instant::now();
    let read = t[0].receive_one(&mut e[0], Duration::from_millis(30), &mut |_, m| {
        got.push(m.to_vec())
    });
    let slept = started.elapsed();
    assert!(!read && got.is_empty());
    assert!(
        slept >= Duration::from_millis(25) && slept < Duration::from_secs(2),
        "slept {slept:?} for a 30 ms timeout"
    );

    // The socket is now in blocking mode, yet draining an empty socket
    // returns at once (every other read passes MSG_DONTWAIT).
    let started = Instant::now();
    assert_eq!(t[0].drain(&mut e[0], &mut |_, m| got.push(m.to_vec())), 0);
    assert!(started.elapsed() < Duration::from_millis(20));

    // A message sent later wakes the sleeper, long before its timeout.
    let (mut a, mut b) = (t.remove(0), t.remove(0));
    let (mut ea, mut eb) = (e.remove(0), e.remove(0));
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        b.send(&mut eb, 0, b"wake up").unwrap();
        (b, eb)
    });
    let started = Instant::now();
    let mut read = false;
    while !read && started.elapsed() < Duration::from_secs(5) {
        read = a.receive_one(&mut ea, Duration::from_secs(2), &mut |from, m| {
            assert_eq!(from, 1);
            got.push(m.to_vec())
        });
    }
    let woke = started.elapsed();
    sender.join().unwrap();
    assert!(read, "no datagram in 5 s");
    assert_eq!(got, vec![b"wake up".to_vec()]);
    assert!(
        woke >= Duration::from_millis(40) && woke < Duration::from_millis(1500),
        "woke after {woke:?}: the read should sleep until the datagram, not its 2 s timeout"
    );

    // A zero timeout reads without waiting.
    let started = Instant::now();
    assert!(!a.receive_one(&mut ea, Duration::ZERO, &mut |_, _| {}));
    assert!(started.elapsed() < Duration::from_millis(20));
}

#[test]
fn a_connected_pair_exchanges_and_the_kernel_keeps_strangers_out() {
    let (mut t, mut e) = support::udp_pair();
    t[0].connect_peer(1).unwrap();
    t[1].connect_peer(0).unwrap();
    assert!(t[0].connect_peer(2).is_err(), "there is no rank 2");

    // A third socket sprays both; a connected socket never reads it.
    let stranger = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for tr in &t {
        stranger
            .send_to(b"garbage", tr.local_addr().unwrap())
            .unwrap();
    }

    let mut got: Vec<(usize, Vec<u8>)> = Vec::new();
    for i in 0u32..50 {
        let (a, b) = t.split_at_mut(1);
        let (ea, eb) = e.split_at_mut(1);
        let msg = request(i);
        a[0].send(&mut ea[0], 1, &msg).unwrap();
        let mut seen = Vec::new();
        while seen.is_empty() {
            assert!(
                b[0].receive_one(&mut eb[0], Duration::from_secs(5), &mut |f, m| seen
                    .push((f, m.to_vec()))),
                "request {i} never arrived"
            );
        }
        assert_eq!(seen, vec![(0, msg.clone())]);
        b[0].send(&mut eb[0], 0, &reply_to(&msg)).unwrap();
        while got.len() == i as usize {
            assert!(
                a[0].receive_one(&mut ea[0], Duration::from_secs(5), &mut |f, m| got
                    .push((f, m.to_vec()))),
                "reply {i} never arrived"
            );
        }
        assert_eq!(got[i as usize], (1, reply_to(&msg)));
    }
    for (tr, ep) in t.iter().zip(&e) {
        let c: &Counters = ep.counters();
        assert_eq!(c.strangers_dropped, 0, "{c:?}");
        assert_eq!(tr.send_errors(), 0);
    }
}
