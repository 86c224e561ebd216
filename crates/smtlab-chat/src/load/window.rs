//! The closed loop's window, for one sender: its messages not yet
//! delivered to every other member of its room. The sender sends its next
//! message while fewer than `window` of them are incomplete; the generator
//! sees every receiver, so it knows when a message is complete without
//! any acknowledgement from the server.
//!
//! A message still incomplete `timeout` after it was sent is given up
//! (its missing deliveries are the run's `lost`) and no longer holds the
//! sender back, so one dropped message costs a pause of `timeout`, not the
//! rest of the sender's messages.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Members that still have to receive it.
    remaining: u32,
    sent: Instant,
}

/// One sender's messages in flight, oldest first.
#[derive(Debug, Default)]
pub struct Window {
    /// The sequence number of the first entry.
    base: u32,
    entries: VecDeque<Entry>,
    /// Entries with deliveries missing.
    incomplete: u32,
}

impl Window {
    /// Messages not yet delivered to every member (nor given up).
    pub fn incomplete(&self) -> u32 {
        self.incomplete
    }

    /// Message `seq` (the next number) was sent at `sent`, for `remaining`
    /// members.
    pub fn sent(&mut self, seq: u32, remaining: u32, sent: Instant) {
        if self.entries.is_empty() {
            self.base = seq;
        }
        debug_assert_eq!(seq, self.base + self.entries.len() as u32);
        self.entries.push_back(Entry { remaining, sent });
        if remaining > 0 {
            self.incomplete += 1;
        }
        self.trim();
    }

    /// One member received message `seq` for the first time: true when
    /// that completed it.
    pub fn delivered(&mut self, seq: u32) -> bool {
        let Some(e) = seq
            .checked_sub(self.base)
            .and_then(|i| self.entries.get_mut(i as usize))
        else {
            return false; // given up already
        };
        if e.remaining == 0 {
            return false;
        }
        e.remaining -= 1;
        let complete = e.remaining == 0;
        if complete {
            self.incomplete -= 1;
            self.trim();
        }
        complete
    }

    /// A member left the room: the messages it had not received (`has`
    /// says which it had) no longer wait for it. Returns how many that
    /// completed.
    pub fn member_gone(&mut self, has: impl Fn(u32) -> bool) -> u32 {
        let mut completed = 0;
        for (i, e) in self.entries.iter_mut().enumerate() {
            if e.remaining > 0 && !has(self.base + i as u32) {
                e.remaining -= 1;
                if e.remaining == 0 {
                    completed += 1;
                }
            }
        }
        self.incomplete -= completed;
        self.trim();
        completed
    }

    /// Give up the messages sent `timeout` or longer before `now`; returns
    /// how many were still incomplete.
    pub fn expire(&mut self, now: Instant, timeout: Duration) -> u32 {
        let mut given_up = 0;
        while let Some(e) = self.entries.front() {
            if now.saturating_duration_since(e.sent) < timeout {
                break;
            }
            if e.remaining > 0 {
                given_up += 1;
            }
            self.entries.pop_front();
            self.base += 1;
        }
        self.incomplete -= given_up;
        self.trim();
        given_up
    }

    /// Complete messages at the front go.
    fn trim(&mut self) {
        while self.entries.front().is_some_and(|e| e.remaining == 0) {
            self.entries.pop_front();
            self.base += 1;
        }
    }

    /// Messages held (complete ones behind an incomplete one included).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_completes_with_its_last_member() {
        let t = Instant::now();
        let mut w = Window::default();
        w.sent(0, 2, t);
        assert_eq!(w.incomplete(), 1);
        assert!(!w.delivered(0));
        assert!(w.delivered(0));
        assert_eq!(w.incomplete(), 0);
        assert_eq!(w.held(), 0);
        assert!(!w.delivered(0), "a late delivery of a completed message");
        w.sent(1, 2, t);
        w.sent(2, 2, t);
        assert_eq!(w.incomplete(), 2);
        // Message 2 completes first: held behind 1 until 1 completes.
        assert!(!w.delivered(2));
        assert!(w.delivered(2));
        assert_eq!((w.incomplete(), w.held()), (1, 2));
        w.delivered(1);
        w.delivered(1);
        assert_eq!((w.incomplete(), w.held()), (0, 0));
    }

    #[test]
    fn a_member_leaving_completes_what_waited_for_it() {
        let t = Instant::now();
        let mut w = Window::default();
        w.sent(5, 2, t);
        w.sent(6, 2, t);
        w.delivered(5);
        w.delivered(6);
        // The member that left had 6 but not 5.
        assert_eq!(w.member_gone(|seq| seq == 6), 1);
        assert_eq!(w.incomplete(), 1);
        assert_eq!(w.member_gone(|_| false), 1);
        assert_eq!((w.incomplete(), w.held()), (0, 0));
    }

    #[test]
    fn old_messages_are_given_up() {
        let t = Instant::now();
        let timeout = Duration::from_secs(1);
        let mut w = Window::default();
        w.sent(0, 1, t);
        w.sent(1, 1, t + Duration::from_millis(500));
        assert_eq!(w.expire(t + Duration::from_millis(999), timeout), 0);
        assert_eq!(w.expire(t + timeout, timeout), 1);
        assert_eq!(w.incomplete(), 1);
        assert!(!w.delivered(0), "given up");
        assert!(w.delivered(1));
        assert_eq!(w.incomplete(), 0);
    }
}
