//! What one client thread records: delivery and connect latencies
//! (HdrHistogram, µs, 3 significant digits), the counts of sends,
//! deliveries, duplicates and out-of-order arrivals, errors by kind, the
//! reasons servers gave for closing connections, and the first send and
//! last delivery that bound the run's elapsed time; and the merge of every
//! thread's record.

use std::collections::BTreeMap;
use std::time::Instant;

use hdrhistogram::Histogram;

use smtlab_serving::Latency;

/// Distinct close reasons kept; further ones are counted under
/// [`OTHER_REASONS`] (a server that puts a counter in its reason would
/// otherwise make one entry per connection).
const MAX_REASONS: usize = 16;
pub const OTHER_REASONS: &str = "(other reasons)";
/// The reason of a connection closed without an `ERROR` line.
pub const NO_REASON: &str = "(no ERROR line)";

/// Kinds of error, named as in `ChatLoadReport::errors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A connection could not be made (retried during set-up).
    Connect,
    /// A numeric error reply to `NICK`/`USER` (433, 432, 461, 451...).
    Register,
    /// A numeric error reply to `JOIN` (403, 405, 471, 473...).
    Join,
    /// Reading failed (reset).
    Read,
    /// Writing failed.
    Write,
    /// The server closed a connection (its reason in `closed_reasons`).
    Closed,
    /// A line that is not IRC, or a `PRIVMSG` whose text is not one of
    /// this run's messages (damaged, truncated, or someone else's).
    Parse,
    /// A message of this run delivered to a member of another room, or to
    /// a target that is not the receiver's channel.
    Misrouted,
    /// A numeric error reply once joined (404 cannot send to channel...).
    Refused,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::Connect,
        ErrorKind::Register,
        ErrorKind::Join,
        ErrorKind::Read,
        ErrorKind::Write,
        ErrorKind::Closed,
        ErrorKind::Parse,
        ErrorKind::Misrouted,
        ErrorKind::Refused,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Register => "register",
            ErrorKind::Join => "join",
            ErrorKind::Read => "read",
            ErrorKind::Write => "write",
            ErrorKind::Closed => "closed",
            ErrorKind::Parse => "parse",
            ErrorKind::Misrouted => "misrouted",
            ErrorKind::Refused => "refused",
        }
    }

    fn index(self) -> usize {
        ErrorKind::ALL
            .iter()
            .position(|&k| k == self)
            .expect("every kind is in ALL")
    }
}

#[derive(Debug, Clone)]
pub struct Record {
    latency: Histogram<u64>,
    connect: Histogram<u64>,
    /// PRIVMSGs handed whole to the kernel.
    pub sent: u64,
    /// Distinct (message, member) arrivals.
    pub deliveries: u64,
    pub duplicates: u64,
    pub out_of_order: u64,
    errors: [u64; ErrorKind::ALL.len()],
    closed_reasons: BTreeMap<String, u64>,
    pub first_send: Option<Instant>,
    pub last_delivery: Option<Instant>,
}

impl Default for Record {
    fn default() -> Record {
        // Auto-resizing: a latency can be as long as the run.
        let h = || Histogram::new(3).expect("3 significant digits are valid");
        Record {
            latency: h(),
            connect: h(),
            sent: 0,
            deliveries: 0,
            duplicates: 0,
            out_of_order: 0,
            errors: [0; ErrorKind::ALL.len()],
            closed_reasons: BTreeMap::new(),
            first_send: None,
            last_delivery: None,
        }
    }
}

/// µs, at least 1 (the histogram counts from 1).
fn micros(d: std::time::Duration) -> u64 {
    (d.as_micros() as u64).max(1)
}

impl Record {
    /// `n` PRIVMSGs went out whole at `now`.
    pub fn sent(&mut self, n: u64, now: Instant) {
        if n > 0 {
            self.sent += n;
            self.first_send.get_or_insert(now);
        }
    }

    /// A first arrival at `now` of a message whose latency runs from
    /// `from`.
    pub fn delivered(&mut self, from: Instant, now: Instant, out_of_order: bool) {
        self.deliveries += 1;
        self.out_of_order += u64::from(out_of_order);
        // An auto-resizing histogram only fails past u64.
        let _ = self
            .latency
            .record(micros(now.saturating_duration_since(from)));
        self.last_delivery = Some(now);
    }

    /// A client joined `took` after its connect began.
    pub fn joined(&mut self, took: std::time::Duration) {
        let _ = self.connect.record(micros(took));
    }

    pub fn error(&mut self, kind: ErrorKind) {
        self.errors[kind.index()] += 1;
    }

    /// A connection the server closed, with its `ERROR` text if it sent
    /// one.
    pub fn closed(&mut self, reason: Option<&str>) {
        self.error(ErrorKind::Closed);
        let reason = reason.unwrap_or(NO_REASON);
        let key = if self.closed_reasons.contains_key(reason)
            || self.closed_reasons.len() < MAX_REASONS
        {
            reason
        } else {
            OTHER_REASONS
        };
        *self.closed_reasons.entry(key.to_string()).or_default() += 1;
    }

    pub fn merge(&mut self, other: &Record) {
        // Both auto-resize, so adding cannot fail on range.
        let _ = self.latency.add(&other.latency);
        let _ = self.connect.add(&other.connect);
        self.sent += other.sent;
        self.deliveries += other.deliveries;
        self.duplicates += other.duplicates;
        self.out_of_order += other.out_of_order;
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        for (reason, n) in &other.closed_reasons {
            let key = if self.closed_reasons.contains_key(reason)
                || self.closed_reasons.len() < MAX_REASONS
            {
                reason.as_str()
            } else {
                OTHER_REASONS
            };
            *self.closed_reasons.entry(key.to_string()).or_default() += n;
        }
        self.first_send = match (self.first_send, other.first_send) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_delivery = self.last_delivery.max(other.last_delivery);
    }

    /// Errors by name, the kinds that happened only.
    pub fn errors_by_kind(&self) -> BTreeMap<String, u64> {
        ErrorKind::ALL
            .iter()
            .zip(self.errors)
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (k.name().to_string(), n))
            .collect()
    }

    pub fn closed_reasons(&self) -> BTreeMap<String, u64> {
        self.closed_reasons.clone()
    }

    pub fn latency_us(&self) -> Latency {
        percentiles(&self.latency)
    }

    pub fn connect_us(&self) -> Latency {
        percentiles(&self.connect)
    }
}

fn percentiles(h: &Histogram<u64>) -> Latency {
    Latency::from_histogram(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn records_merge_and_bound_the_elapsed_time() {
        let t = Instant::now();
        let mut a = Record::default();
        a.sent(0, t);
        assert_eq!(a.first_send, None, "nothing sent, no first send");
        a.sent(2, t + Duration::from_millis(5));
        a.delivered(t, t + Duration::from_millis(3), false);
        a.error(ErrorKind::Parse);
        a.closed(Some("Closing connection (Excess Flood)"));
        let mut b = Record::default();
        b.sent(1, t + Duration::from_millis(1));
        b.delivered(t, t + Duration::from_millis(9), true);
        b.closed(None);
        b.joined(Duration::from_micros(250));
        a.merge(&b);
        assert_eq!((a.sent, a.deliveries, a.out_of_order), (3, 2, 1));
        assert_eq!(a.first_send, Some(t + Duration::from_millis(1)));
        assert_eq!(a.last_delivery, Some(t + Duration::from_millis(9)));
        let e = a.errors_by_kind();
        assert_eq!(e.get("closed"), Some(&2));
        assert_eq!(e.get("parse"), Some(&1));
        assert_eq!(e.len(), 2);
        let r = a.closed_reasons();
        assert_eq!(r.get("Closing connection (Excess Flood)"), Some(&1));
        assert_eq!(r.get(NO_REASON), Some(&1));
        let l = a.latency_us();
        assert!((8990.0..=9010.0).contains(&l.max), "{l:?}");
        assert!((2990.0..=3010.0).contains(&l.p50), "{l:?}");
        assert!((249.0..=251.0).contains(&a.connect_us().p50));
    }

    #[test]
    fn close_reasons_are_bounded() {
        let mut r = Record::default();
        for i in 0..100 {
            r.closed(Some(&format!("reason {i}")));
        }
        let reasons = r.closed_reasons();
        assert_eq!(reasons.len(), MAX_REASONS + 1);
        assert_eq!(
            reasons.get(OTHER_REASONS),
            Some(&(100 - MAX_REASONS as u64))
        );
        assert_eq!(reasons.values().sum::<u64>(), 100);
    }
}
