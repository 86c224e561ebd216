//! The open loop's schedule: one client thread's requests at fixed
//! intended send times, `first + i × period`, until the end of the window.
//!
//! Each request's latency runs from its intended time, not from when it was
//! actually sent (wrk2's correction of coordinated omission): when the
//! server stalls, the requests that should have gone meanwhile wait for a
//! free connection, and their latencies show the whole wait. The schedule
//! never skips a request: one that is due is handed out, late, as soon as
//! a connection is free. A request that was due while no connection was
//! free is marked late (`late_sends`).
//!
//! The times come from an index and a period, not from the last send, so
//! lateness never shifts the schedule.

use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Schedule {
    first: Instant,
    /// Seconds between two intended times.
    period: f64,
    /// Requests intended before this are the whole schedule.
    end: Instant,
    /// The index of the next request to hand out.
    next: u64,
    /// Requests below this index were due while no connection was free.
    late_below: u64,
}

/// One request handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    pub intended: Instant,
    /// It was due while every connection was busy.
    pub late: bool,
}

impl Schedule {
    /// `rate` requests per second from `first` until `end`.
    pub fn new(first: Instant, rate: f64, end: Instant) -> Schedule {
        Schedule {
            first,
            period: 1.0 / rate,
            end,
            next: 0,
            late_below: 0,
        }
    }

    fn at(&self, i: u64) -> Instant {
        self.first + Duration::from_secs_f64(i as f64 * self.period)
    }

    /// The intended time of the next request, if the schedule has one left.
    pub fn next_time(&self) -> Option<Instant> {
        Some(self.at(self.next)).filter(|&t| t < self.end)
    }

    /// The next request, if it is due at `now`.
    pub fn take(&mut self, now: Instant) -> Option<Due> {
        let intended = self.next_time().filter(|&t| t <= now)?;
        let late = self.next < self.late_below;
        self.next += 1;
        Some(Due { intended, late })
    }

    /// Every connection is busy at `now`: the requests due by then are late.
    pub fn no_free_connection(&mut self, now: Instant) {
        self.late_below = self.late_below.max(self.due_by(now));
    }

    /// How many requests due by `now` are not handed out yet, of those
    /// intended at or after `from`: what is still waiting when the run ends.
    pub fn waiting_in(&self, now: Instant, from: Instant) -> u64 {
        let first = self.next.max(self.count(from, false));
        self.due_by(now).saturating_sub(first)
    }

    /// How many requests are intended at or before `now` (and before the end).
    fn due_by(&self, now: Instant) -> u64 {
        self.count(now, true)
    }

    /// How many requests are intended before `t` (or at `t`, if
    /// `inclusive`), and before the end.
    fn count(&self, t: Instant, inclusive: bool) -> u64 {
        let counted = |i: u64| {
            let at = self.at(i);
            (at < t || (inclusive && at == t)) && at < self.end
        };
        let mut n = match t.min(self.end).checked_duration_since(self.first) {
            Some(d) => (d.as_secs_f64() / self.period) as u64 + 1,
            None => 0,
        };
        // Float rounding and the end: settle on the exact count.
        while n > 0 && !counted(n - 1) {
            n -= 1;
        }
        while counted(n) {
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_handed_out_at_their_times_and_late_ones_keep_theirs() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        // 1000/s for 10 ms: requests at 0, 1, ..., 9 ms.
        let mut s = Schedule::new(t, 1000.0, t + ms(10));
        assert_eq!(s.take(t).unwrap().intended, t);
        assert_eq!(s.take(t), None);
        assert_eq!(s.next_time(), Some(t + ms(1)));
        // A stall until 5.5 ms with no free connection: 1..=5 are late.
        let now = t + Duration::from_micros(5500);
        s.no_free_connection(now);
        assert_eq!(s.waiting_in(now, t), 5);
        assert_eq!(s.waiting_in(now, t + ms(3)), 3);
        for i in 1..=5 {
            let d = s.take(now).unwrap();
            assert_eq!(d.intended, t + ms(i));
            assert!(d.late);
        }
        assert_eq!(s.take(now), None);
        let d = s.take(t + ms(6)).unwrap();
        assert!(!d.late);
        // Nothing at or after the end.
        let later = t + ms(100);
        assert_eq!(s.waiting_in(later, t), 3);
        for _ in 0..3 {
            s.take(later).unwrap();
        }
        assert_eq!(s.take(later), None);
        assert_eq!(s.next_time(), None);
    }
}
