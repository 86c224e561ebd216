//! The open loop's schedule: message i of the whole run is meant to go at
//! `start + i / rate`, from sender `i mod S` (S senders in all), round
//! after round, until every sender has sent M. A client thread owns a
//! contiguous block of senders (whole rooms) and walks only its own
//! messages of each round; together the threads send the run's one even
//! stream.
//!
//! Each message's latency runs from its intended time (carried in its
//! text), so a message that goes out late — the loop woke late, or the
//! socket had no room — shows the wait in its latency (no coordinated
//! omission). The times come from the index, never from the last send, so
//! lateness never shifts the schedule.

use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Schedule {
    start: Instant,
    /// Seconds between two messages of the whole run.
    period: f64,
    /// Senders in the whole run, and this thread's: `first..first + count`.
    senders: u64,
    first: u64,
    count: u64,
    /// Messages per sender.
    rounds: u64,
    /// The next message: its round and its sender among this thread's.
    round: u64,
    k: u64,
}

/// One message handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    pub intended: Instant,
    /// The sender among this thread's, from 0.
    pub sender: usize,
}

impl Schedule {
    /// `rate` messages per second in all, from `senders` senders of which
    /// this thread has `count` from `first`, `rounds` messages each.
    pub fn new(
        start: Instant,
        rate: f64,
        senders: usize,
        first: usize,
        count: usize,
        rounds: usize,
    ) -> Schedule {
        Schedule {
            start,
            period: 1.0 / rate,
            senders: senders as u64,
            first: first as u64,
            count: count as u64,
            rounds: rounds as u64,
            round: 0,
            k: 0,
        }
    }

    /// When the next message is meant to go, if any is left.
    pub fn next_time(&self) -> Option<Instant> {
        if self.round >= self.rounds || self.count == 0 {
            return None;
        }
        let i = self.round * self.senders + self.first + self.k;
        Some(self.start + Duration::from_secs_f64(i as f64 * self.period))
    }

    /// The next message, if it is due at `now`.
    pub fn take(&mut self, now: Instant) -> Option<Due> {
        let intended = self.next_time().filter(|&t| t <= now)?;
        let sender = self.k as usize;
        self.k += 1;
        if self.k == self.count {
            self.k = 0;
            self.round += 1;
        }
        Some(Due { intended, sender })
    }

    /// Every message has been handed out.
    pub fn done(&self) -> bool {
        self.next_time().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_interleave_into_one_even_stream() {
        let t = Instant::now();
        // 4 senders at 100/s: thread A has senders 0-1, thread B 2-3.
        let mut a = Schedule::new(t, 100.0, 4, 0, 2, 2);
        let mut b = Schedule::new(t, 100.0, 4, 2, 2, 2);
        let far = t + Duration::from_secs(10);
        let mut all = Vec::new();
        while let Some(d) = a.take(far) {
            all.push((d.intended, d.sender));
        }
        while let Some(d) = b.take(far) {
            all.push((d.intended, d.sender + 2));
        }
        all.sort();
        let ms: Vec<(u128, usize)> = all.iter().map(|&(i, s)| ((i - t).as_millis(), s)).collect();
        assert_eq!(
            ms,
            vec![
                (0, 0),
                (10, 1),
                (20, 2),
                (30, 3),
                (40, 0),
                (50, 1),
                (60, 2),
                (70, 3)
            ]
        );
        assert!(a.done() && b.done());
    }

    #[test]
    fn nothing_is_handed_out_before_it_is_due() {
        let t = Instant::now();
        let mut s = Schedule::new(t, 10.0, 1, 0, 1, 3);
        assert!(s.take(t).is_some());
        assert!(s.take(t + Duration::from_millis(99)).is_none());
        assert_eq!(s.next_time(), Some(t + Duration::from_millis(100)));
        // Late: both overdue messages come at once, with their own times.
        let late = t + Duration::from_secs(1);
        assert_eq!(
            s.take(late).unwrap().intended,
            t + Duration::from_millis(100)
        );
        assert_eq!(
            s.take(late).unwrap().intended,
            t + Duration::from_millis(200)
        );
        assert!(s.take(late).is_none());
        assert!(s.done());
    }
}
