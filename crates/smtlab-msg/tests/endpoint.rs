//! The endpoint's behaviour, one property per test, driven by hand with an
//! explicit clock and datagrams carried (or lost) by the test.

use smtlab_msg::wire::{Header, Kind};
use smtlab_msg::{Config, Endpoint, Fault, SendError, HEADER_LEN, MAX_FRAGMENT, PAGE};

const MS: u64 = 1_000_000;

/// Datagrams an endpoint emitted: (to, bytes).
type Sent = Vec<(usize, Vec<u8>)>;

fn pair(config: Config) -> (Endpoint, Endpoint) {
    (
        Endpoint::new(0, config.clone()).unwrap(),
        Endpoint::new(1, config).unwrap(),
    )
}

fn send(e: &mut Endpoint, to: usize, msg: &[u8], now: u64) -> (Result<(), SendError>, Sent) {
    let mut sent = Sent::new();
    let r = e.send(to, msg, now, &mut |to, d| sent.push((to, d.to_vec())));
    (r, sent)
}

/// Feeds datagrams to `e`; returns what it emitted and delivered.
fn receive(e: &mut Endpoint, datagrams: &Sent, now: u64) -> (Sent, Vec<(usize, Vec<u8>)>) {
    let mut sent = Sent::new();
    let mut got = Vec::new();
    for (_, d) in datagrams {
        e.receive(
            d,
            now,
            &mut |to, d| sent.push((to, d.to_vec())),
            &mut |from, m| got.push((from, m.to_vec())),
        );
    }
    (sent, got)
}

fn kind(d: &[u8]) -> Kind {
    Header::decode(d).unwrap().0.kind
}

#[test]
fn endpoint_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<Endpoint>();
}

#[test]
fn caller_bugs_are_errors_and_send_nothing() {
    let (mut a, _) = pair(Config::new(2));
    assert_eq!(
        send(&mut a, 2, b"x", 0),
        (Err(SendError::NoSuchRank { to: 2, ranks: 2 }), vec![])
    );
    assert_eq!(
        send(&mut a, 0, b"x", 0),
        (Err(SendError::ToSelf(0)), vec![])
    );
    let big = vec![0; 256 * 1024 + 1];
    assert_eq!(
        send(&mut a, 1, &big, 0),
        (
            Err(SendError::TooLarge {
                len: big.len(),
                max: 256 * 1024
            }),
            vec![]
        )
    );
    assert_eq!(a.counters().messages_sent, 0);
    assert!(a.idle());
    assert!(Endpoint::new(2, Config::new(2)).is_err());
}

#[test]
fn a_peer_that_never_acks_fills_the_window_and_its_acks_reopen_it() {
    let config = Config {
        window: 8,
        max_message: 8 * MAX_FRAGMENT,
        ..Config::new(2)
    };
    let (mut a, mut b) = pair(config);
    let mut to_b = Sent::new();
    for i in 0..7u8 {
        let (r, sent) = send(&mut a, 1, &[i], 0);
        assert_eq!(r, Ok(()));
        to_b.extend(sent);
    }
    // One slot left: a two-fragment message does not fit, nothing of it
    // goes out; a one-fragment message does.
    let two = vec![9; MAX_FRAGMENT + 1];
    assert_eq!(
        send(&mut a, 1, &two, 0),
        (Err(SendError::WindowFull), vec![])
    );
    let (r, sent) = send(&mut a, 1, &[7], 0);
    assert_eq!(r, Ok(()));
    to_b.extend(sent);
    assert_eq!(a.in_flight(1), 8);
    assert_eq!(
        send(&mut a, 1, &[8], 0),
        (Err(SendError::WindowFull), vec![])
    );
    assert_eq!(a.counters().messages_sent, 8);

    // The peer gets everything and acks it in one datagram.
    let (sent, got) = receive(&mut b, &to_b, 1);
    assert!(sent.is_empty(), "acks wait for ack_delay or a flush");
    let msgs: Vec<Vec<u8>> = got.iter().map(|(_, m)| m.clone()).collect();
    assert_eq!(msgs, (0..8u8).map(|i| vec![i]).collect::<Vec<_>>());
    let mut acks = Sent::new();
    b.flush_acks(1, &mut |to, d| acks.push((to, d.to_vec())));
    assert_eq!(acks.len(), 1);
    assert_eq!(kind(&acks[0].1), Kind::Ack);
    receive(&mut a, &acks, 2);
    assert!(a.idle());
    let (r, sent) = send(&mut a, 1, &two, 3);
    assert_eq!(r, Ok(()));
    assert_eq!(sent.len(), 2);
}

#[test]
fn with_all_datagrams_lost_retransmission_timeouts_double_up_to_the_cap() {
    let config = Config {
        fault: Fault {
            loss: 1.0,
            ..Fault::none()
        },
        ..Config::new(2)
    };
    let (mut a, _) = pair(config);
    let (r, sent) = send(&mut a, 1, b"lost", 0);
    assert_eq!(r, Ok(()));
    assert!(sent.is_empty());
    let mut times = Vec::new();
    let mut now = 0;
    while now <= 1_200 * MS {
        if let Some(deadline) = a.next_deadline() {
            assert!(deadline >= now, "a deadline was missed");
        }
        let before = a.counters().retransmissions;
        a.tick(now, &mut |_, _| panic!("the fault drops everything"));
        if a.counters().retransmissions > before {
            times.push(now / MS);
        }
        now += MS / 10;
    }
    let gaps: Vec<u64> = std::iter::once(0)
        .chain(times.iter().copied())
        .collect::<Vec<_>>()
        .windows(2)
        .map(|w| w[1] - w[0])
        .collect();
    assert_eq!(gaps, [5, 10, 20, 40, 80, 160, 200, 200, 200, 200]);
    assert_eq!(a.counters().injected_drops, 1 + times.len() as u64);
    assert_eq!(a.counters().datagrams_sent, 0);
    assert!(!a.idle());
}

#[test]
fn a_loss_free_ping_pong_needs_no_standalone_acks_and_no_retransmissions() {
    let (mut a, mut b) = pair(Config::new(2));
    let mut now = 0;
    for i in 0..1_000u32 {
        let request = i.to_be_bytes().repeat(100);
        let (r, to_b) = send(&mut a, 1, &request, now);
        assert_eq!(r, Ok(()));
        now += 20_000;
        let (acks, got) = receive(&mut b, &to_b, now);
        assert!(acks.is_empty());
        assert_eq!(got, [(0, request.clone())]);
        b.tick(now, &mut |_, _| panic!("nothing is due at b"));
        let reply: Vec<u8> = request.iter().map(|x| !x).collect();
        let (r, to_a) = send(&mut b, 0, &reply, now);
        assert_eq!(r, Ok(()));
        now += 20_000;
        let (acks, got) = receive(&mut a, &to_a, now);
        assert!(acks.is_empty());
        assert_eq!(got, [(1, reply)]);
        a.tick(now, &mut |_, _| panic!("nothing is due at a"));
    }
    // The last reply's ack is all that is owed, by a only.
    assert!(a.idle());
    assert!(!b.idle());
    let mut last = Sent::new();
    a.flush_acks(now, &mut |to, d| last.push((to, d.to_vec())));
    b.flush_acks(now, &mut |_, _| panic!("b owes nothing"));
    assert_eq!(last.len(), 1);
    receive(&mut b, &last, now);
    assert!(b.idle());
    for e in [&a, &b] {
        let c = e.counters();
        assert_eq!(c.retransmissions, 0);
        assert_eq!(c.datagrams_sent, c.messages_sent + c.acks_sent);
        assert_eq!(c.messages_received, 1_000);
    }
    assert_eq!(a.counters().acks_sent + b.counters().acks_sent, 1);
}

#[test]
fn a_lost_ack_is_repaired_by_an_immediate_ack_to_the_retransmission() {
    let (mut a, mut b) = pair(Config::new(2));
    let (_, to_b) = send(&mut a, 1, b"hello", 0);
    let (_, got) = receive(&mut b, &to_b, 0);
    assert_eq!(got.len(), 1);
    // b's delayed ack goes out after 1 ms and is lost.
    let mut lost = 0;
    b.tick(MS, &mut |_, _| lost += 1);
    assert_eq!(lost, 1);
    // a retransmits at 5 ms; b drops the duplicate and acks at once.
    let mut again = Sent::new();
    a.tick(5 * MS, &mut |to, d| again.push((to, d.to_vec())));
    assert_eq!(again.len(), 1);
    let (acks, got) = receive(&mut b, &again, 5 * MS);
    assert!(got.is_empty(), "delivered twice");
    assert_eq!(acks.len(), 1);
    assert_eq!(kind(&acks[0].1), Kind::Ack);
    // A burst of the same duplicates within half a timeout gets no more acks.
    let (more, _) = receive(&mut b, &again, 5 * MS + 1);
    assert!(more.is_empty());
    assert_eq!(b.counters().duplicates_dropped, 2);
    receive(&mut a, &acks, 5 * MS);
    assert!(a.idle());
    assert_eq!(a.next_deadline(), None);
}

#[test]
fn a_fragmented_message_arriving_backwards_is_delivered_once_and_whole() {
    let (mut a, mut b) = pair(Config::new(2));
    let msg: Vec<u8> = (0..3 * PAGE + 1).map(|i| (i * 7 % 251) as u8).collect();
    let (_, mut to_b) = send(&mut a, 1, &msg, 0);
    assert_eq!(to_b.len(), 3);
    assert!(to_b
        .iter()
        .all(|(_, d)| d.len() <= HEADER_LEN + MAX_FRAGMENT));
    to_b.reverse();
    let dup = to_b[0].clone();
    to_b.push(dup);
    let (_, got) = receive(&mut b, &to_b, 0);
    assert_eq!(got, [(0, msg)]);
    assert_eq!(b.counters().duplicates_dropped, 1);
}

#[test]
fn strangers_are_counted_and_dropped() {
    let (mut a, mut b) = pair(Config::new(3));
    let (_, to_b) = send(&mut a, 1, b"real", 0);
    let real = &to_b[0].1;
    let mut strangers: Sent = vec![(1, b"not a datagram at all".to_vec()), (1, vec![])];
    // The same datagram claiming other ranks.
    for (src, dst) in [(0u16, 2u16), (1, 1), (7, 1)] {
        let mut d = real.clone();
        d[4..6].copy_from_slice(&src.to_be_bytes());
        d[6..8].copy_from_slice(&dst.to_be_bytes());
        strangers.push((1, d));
    }
    let (sent, got) = receive(&mut b, &strangers, 0);
    assert!(sent.is_empty() && got.is_empty());
    assert_eq!(b.counters().strangers_dropped, 5);
    assert_eq!(b.counters().datagrams_received, 0);
    let (_, got) = receive(&mut b, &to_b, 0);
    assert_eq!(got, [(0, b"real".to_vec())]);
}

#[test]
fn next_deadline_covers_owed_acks_and_retransmissions() {
    let (mut a, mut b) = pair(Config::new(2));
    assert_eq!(a.next_deadline(), None);
    let (_, to_b) = send(&mut a, 1, b"x", 10);
    assert_eq!(a.next_deadline(), Some(10 + 5 * MS));
    receive(&mut b, &to_b, 20);
    assert_eq!(b.next_deadline(), Some(20 + MS));
    // Not yet due: nothing goes out.
    b.tick(19 + MS, &mut |_, _| panic!("too early"));
    let mut acks = 0;
    b.tick(20 + MS, &mut |_, _| acks += 1);
    assert_eq!(acks, 1);
    assert_eq!(b.next_deadline(), None);
}
