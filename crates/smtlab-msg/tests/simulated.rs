//! Endpoints over a simulated bad network: a seeded scheduler carries
//! datagrams with random latency (so they overtake each other), drops 20%
//! of them, duplicates some and mixes in garbage, while the endpoints may
//! inject faults of their own. Whatever happens, every message must arrive
//! exactly once, whole, in order per sender, and the counters must add up.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use smtlab_msg::{Config, Counters, Endpoint, Fault, SendError, PAGE};

const US: u64 = 1_000;

/// A datagram on its way.
struct Packet {
    at: u64,
    to: usize,
    bytes: Vec<u8>,
}

/// The network: what is in flight and what became of everything sent.
struct Network {
    rng: ChaCha8Rng,
    loss: f64,
    duplicate: f64,
    in_flight: Vec<Packet>,
    sent: u64,
    dropped: u64,
    duplicated: u64,
    delivered: u64,
    garbage: u64,
}

impl Network {
    fn carry(&mut self, now: u64, to: usize, bytes: &[u8]) {
        self.sent += 1;
        if self.rng.random_bool(self.loss) {
            self.dropped += 1;
            return;
        }
        let copies = if self.rng.random_bool(self.duplicate) {
            self.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let at = now + self.rng.random_range(10 * US..3_000 * US);
            self.in_flight.push(Packet {
                at,
                to,
                bytes: bytes.to_vec(),
            });
        }
    }
}

/// The `k`-th message from `from` to `to`, of `len` bytes: its bytes say
/// who sent it and which one it is, so a mix-up cannot go unnoticed.
fn message(from: usize, to: usize, k: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|j| ((from * 131 + to * 31 + k * 7 + j * 3 + j / 251) % 256) as u8)
        .collect()
}

/// Runs one seeded scenario to the end and checks it.
// One simulated run read top to bottom: set-up, the event loop, the checks
// at the end share its state; split, the story would be harder to follow.
#[allow(clippy::too_many_lines)]
fn scenario(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let ranks = rng.random_range(2..=4);
    let faulty = rng.random_bool(0.5);
    let mut endpoints: Vec<Endpoint> = (0..ranks)
        .map(|r| {
            let fault = if faulty {
                Fault {
                    loss: 0.05,
                    reorder: 0.05,
                    duplicate: 0.02,
                    seed: seed ^ 0xfa17,
                }
            } else {
                Fault::none()
            };
            Endpoint::new(
                r,
                Config {
                    fault,
                    ..Config::new(ranks)
                },
            )
            .unwrap()
        })
        .collect();
    let mut net = Network {
        rng: ChaCha8Rng::seed_from_u64(seed ^ 0x0e7),
        loss: 0.2,
        duplicate: 0.05,
        in_flight: Vec::new(),
        sent: 0,
        dropped: 0,
        duplicated: 0,
        delivered: 0,
        garbage: 0,
    };

    // What to send: per (from, to), message lengths in order.
    let mut plan = vec![vec![Vec::new(); ranks]; ranks];
    let mut total = 0;
    for i in 0..40 {
        let from = rng.random_range(0..ranks);
        let to = (from + rng.random_range(1..ranks)) % ranks;
        let len = if i % 20 == 0 {
            200 * 1024
        } else {
            rng.random_range(0..=3 * PAGE + 1)
        };
        plan[from][to].push(len);
        total += 1;
    }
    let mut next_to_send = vec![vec![0; ranks]; ranks];
    let mut next_to_get = vec![vec![0; ranks]; ranks];
    let mut received = 0;

    let mut now = 0;
    // Simulated time; runs take well under a second of it.
    let deadline = 20_000_000_000;
    loop {
        // Start sends, in plan order per channel, some at a time.
        for from in 0..ranks {
            for to in 0..ranks {
                let k = next_to_send[from][to];
                if k == plan[from][to].len() || !rng.random_bool(0.3) {
                    continue;
                }
                let msg = message(from, to, k, plan[from][to][k]);
                let out = &mut |to: usize, d: &[u8]| net.carry(now, to, d);
                match endpoints[from].send(to, &msg, now, out) {
                    Ok(()) => next_to_send[from][to] += 1,
                    Err(SendError::WindowFull) => {}
                    Err(e) => panic!("send: {e}"),
                }
            }
        }
        // Deliver what has arrived, in arrival-time order.
        net.in_flight.sort_by_key(|p| std::cmp::Reverse(p.at));
        while net.in_flight.last().is_some_and(|p| p.at <= now) {
            let p = net.in_flight.pop().unwrap();
            net.delivered += 1;
            let mut deliver = |from: usize, m: &[u8]| {
                let k = next_to_get[from][p.to];
                assert!(
                    k < plan[from][p.to].len(),
                    "{from}→{}: an extra message",
                    p.to
                );
                let want = message(from, p.to, k, plan[from][p.to][k]);
                assert!(
                    m == want,
                    "{from}→{}: message {k} wrong or out of order",
                    p.to
                );
                next_to_get[from][p.to] += 1;
                received += 1;
            };
            let out = &mut |to: usize, d: &[u8]| net.carry(now, to, d);
            endpoints[p.to].receive(&p.bytes, now, out, &mut deliver);
        }
        // Now and then a datagram from nowhere.
        if rng.random_bool(0.01) {
            let len = rng.random_range(0..64);
            let junk: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            net.garbage += 1;
            let to = rng.random_range(0..ranks);
            endpoints[to].receive(&junk, now, &mut |_, _| {}, &mut |_, _| {
                panic!("garbage delivered")
            });
        }
        for e in &mut endpoints {
            let out = &mut |to: usize, d: &[u8]| net.carry(now, to, d);
            e.tick(now, out);
        }
        let done = received == total && endpoints.iter().all(Endpoint::idle);
        if done {
            break;
        }
        assert!(
            now < deadline,
            "seed {seed}: stuck with {received}/{total} delivered"
        );
        // On to the next event — a send to start, a datagram landing, an
        // endpoint's deadline — in steps of at least 100 µs; skipping idle
        // time makes a stuck run fail fast too.
        let sends_left =
            (0..ranks).any(|f| (0..ranks).any(|t| next_to_send[f][t] < plan[f][t].len()));
        let next = net
            .in_flight
            .iter()
            .map(|p| p.at)
            .chain(endpoints.iter().filter_map(Endpoint::next_deadline))
            .chain(sends_left.then_some(now + 100 * US))
            .min()
            .unwrap_or(now + 100 * US);
        now = next.max(now + 100 * US);
    }

    let mut sum = Counters::default();
    for e in &endpoints {
        sum.add(e.counters());
    }
    assert_eq!(sum.messages_sent, total as u64);
    assert_eq!(sum.messages_received, total as u64);
    assert_eq!(sum.bytes_sent, sum.bytes_received);
    assert!(sum.retransmissions > 0, "20% loss and no retransmission?");
    assert_eq!(
        sum.strangers_dropped, net.garbage,
        "only the garbage is strange"
    );
    // Every datagram the endpoints sent reached the network, and every one
    // the network delivered was counted on arrival.
    assert_eq!(sum.datagrams_sent, net.sent);
    assert_eq!(sum.datagrams_received, net.delivered);
    assert_eq!(
        net.sent - net.dropped + net.duplicated,
        net.delivered + net.in_flight.len() as u64
    );
    if faulty {
        assert!(sum.injected_drops > 0);
    } else {
        assert_eq!(
            sum.injected_drops + sum.injected_reorders + sum.injected_duplicates,
            0
        );
    }
}

proptest! {
    // Integration tests have no lib.rs beside them to keep regressions in;
    // a failure prints its seed, which is enough to replay it.
    // Shrinking a seed means nothing, so failures are reported as found.
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        max_shrink_iters: 0,
        ..ProptestConfig::with_cases(24)
    })]

    #[test]
    fn every_message_arrives_once_in_order_over_a_bad_network(seed in any::<u64>()) {
        scenario(seed);
    }
}
