//! What one client thread records in the measured window: latencies in an
//! HdrHistogram (µs, 3 significant digits), answers, errors by kind and
//! bytes; and the merge of every thread's record into the numbers of a
//! [`LoadReport`](super::LoadReport).
//!
//! Which instant decides whether an event is in the window is the caller's
//! choice (closed loop: when it ended; open loop: the request's intended
//! send time); the recorder only compares it with the window.

use std::collections::BTreeMap;
use std::time::Instant;

use hdrhistogram::Histogram;

use super::response::Answer;
use smtlab_serving::Latency;

/// Kinds of error, named as in `LoadReport::errors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The connection could not be made.
    Connect,
    /// Reading failed (reset).
    Read,
    /// Writing the request failed.
    Write,
    /// No whole response within the request timeout.
    Timeout,
    Status4xx,
    Status5xx,
    /// The body is not the file's (wrong byte, wrong length).
    Body,
    /// Not an HTTP response, or data nobody asked for.
    Parse,
    /// The server closed the connection before the response was whole.
    Closed,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::Connect,
        ErrorKind::Read,
        ErrorKind::Write,
        ErrorKind::Timeout,
        ErrorKind::Status4xx,
        ErrorKind::Status5xx,
        ErrorKind::Body,
        ErrorKind::Parse,
        ErrorKind::Closed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Read => "read",
            ErrorKind::Write => "write",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Status4xx => "status_4xx",
            ErrorKind::Status5xx => "status_5xx",
            ErrorKind::Body => "body",
            ErrorKind::Parse => "parse",
            ErrorKind::Closed => "closed",
        }
    }
}

/// The measured window, `[start, end)`.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub start: Instant,
    pub end: Instant,
}

impl Window {
    pub fn contains(&self, t: Instant) -> bool {
        t >= self.start && t < self.end
    }
}

/// One thread's record (and, merged, the run's).
#[derive(Debug, Clone)]
pub struct Record {
    window: Window,
    latency: Histogram<u64>,
    pub requests: u64,
    pub ok: u64,
    pub errors: [u64; ErrorKind::ALL.len()],
    pub bytes: u64,
    pub late_sends: u64,
    /// Requests sent (closed loop) or intended (open loop) in the window.
    pub sent: u64,
    /// Requests still waiting for an answer when the recording ended.
    pub in_flight_at_end: u64,
}

impl Record {
    pub fn new(window: Window) -> Record {
        Record {
            window,
            // Auto-resizing: a latency can be as long as the run.
            latency: Histogram::new(3).expect("3 significant digits are valid"),
            requests: 0,
            ok: 0,
            errors: [0; ErrorKind::ALL.len()],
            bytes: 0,
            late_sends: 0,
            sent: 0,
            in_flight_at_end: 0,
        }
    }

    pub fn window(&self) -> Window {
        self.window
    }

    /// A response that ended at `done` for a request meant to go at
    /// `intended`; recorded when `at` is in the window.
    pub fn answer(&mut self, at: Instant, intended: Instant, done: Instant, a: &Answer) {
        if !self.window.contains(at) {
            return;
        }
        self.requests += 1;
        self.bytes += a.bytes;
        let us = done.saturating_duration_since(intended).as_micros();
        // The histogram counts from 1 µs; an auto-resizing one only fails
        // past u64, which a duration in µs of a 30-day run never reaches.
        let _ = self.latency.record((us as u64).max(1));
        match a.status {
            200..=399 if matches!(a.body, Some(Err(_))) => self.error_in_window(ErrorKind::Body),
            200..=399 => self.ok += 1,
            400..=499 => self.error_in_window(ErrorKind::Status4xx),
            500..=599 => self.error_in_window(ErrorKind::Status5xx),
            _ => self.error_in_window(ErrorKind::Parse),
        }
    }

    /// An error of `kind`, recorded when `at` is in the window.
    pub fn error(&mut self, at: Instant, kind: ErrorKind) {
        if self.window.contains(at) {
            self.error_in_window(kind);
        }
    }

    fn error_in_window(&mut self, kind: ErrorKind) {
        self.add_errors(kind, 1);
    }

    /// `n` errors of `kind` the caller found to be in the window.
    pub fn add_errors(&mut self, kind: ErrorKind, n: u64) {
        let i = ErrorKind::ALL
            .iter()
            .position(|&k| k == kind)
            .expect("every kind is in ALL");
        self.errors[i] += n;
    }

    /// A request went out (or was meant to, open loop) at `at`; counted
    /// when `at` is in the window.
    pub fn sent(&mut self, at: Instant) {
        if self.window.contains(at) {
            self.sent += 1;
        }
    }

    /// Open loop: a request meant for `intended` found no free connection.
    pub fn late_send(&mut self, intended: Instant) {
        if self.window.contains(intended) {
            self.late_sends += 1;
        }
    }

    /// Add another thread's record.
    pub fn merge(&mut self, other: &Record) {
        // Both auto-resize, so adding cannot fail on range.
        let _ = self.latency.add(&other.latency);
        self.requests += other.requests;
        self.ok += other.ok;
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
        self.bytes += other.bytes;
        self.late_sends += other.late_sends;
        self.sent += other.sent;
        self.in_flight_at_end += other.in_flight_at_end;
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

    pub fn latency_us(&self) -> Latency {
        Latency::from_histogram(&self.latency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fileset::BodyMismatch;
    use std::time::Duration;

    fn answer(status: u16, body: Option<Result<(), BodyMismatch>>) -> Answer {
        Answer {
            status,
            bytes: 100,
            close: false,
            body,
        }
    }

    #[test]
    fn only_the_window_is_recorded_and_kinds_are_named() {
        let t = Instant::now();
        let w = Window {
            start: t + Duration::from_secs(1),
            end: t + Duration::from_secs(2),
        };
        let mut r = Record::new(w);
        let inside = t + Duration::from_millis(1500);
        r.answer(t, t, t, &answer(200, None));
        r.answer(
            inside,
            inside,
            inside + Duration::from_millis(3),
            &answer(200, None),
        );
        r.answer(inside, inside, inside, &answer(503, None));
        r.answer(inside, inside, inside, &answer(404, None));
        let bad = Some(Err(BodyMismatch::Byte { offset: 3 }));
        r.answer(inside, inside, inside, &answer(200, bad));
        r.error(inside, ErrorKind::Timeout);
        r.error(w.end, ErrorKind::Timeout);
        assert_eq!(r.requests, 4);
        assert_eq!(r.ok, 1);
        assert_eq!(r.bytes, 400);
        let e = r.errors_by_kind();
        assert_eq!(
            e.into_iter().collect::<Vec<_>>(),
            vec![
                ("body".to_string(), 1),
                ("status_4xx".to_string(), 1),
                ("status_5xx".to_string(), 1),
                ("timeout".to_string(), 1),
            ]
        );
        let mut merged = Record::new(w);
        merged.merge(&r);
        merged.merge(&r);
        assert_eq!(merged.requests, 8);
        let l = merged.latency_us();
        assert!((2990.0..=3010.0).contains(&l.max), "{l:?}");
        assert_eq!(l.p50, 1.0);
    }
}
