//! One client connection: a non-blocking socket registered with its
//! thread's mio poll, the request being written, and the response being
//! read. It holds at most one request at a time; the client loop decides
//! when to send the next.
//!
//! A connection without a socket connects when asked to send (so with a
//! new connection per request, the connect is part of the request's
//! latency); one that fails, times out or is closed by the server drops its
//! socket and connects again on its next request.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::Instant;

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};

use super::record::ErrorKind;
use super::response::{Answer, ResponseReader, Step};
use crate::fileset::BodyCheck;

/// The request a connection is busy with.
#[derive(Debug)]
pub struct InFlight {
    /// Its latency runs from here (closed loop: when it was sent; open
    /// loop: when it was meant to be sent).
    pub intended: Instant,
    /// A request without a whole response by then is a timeout.
    pub deadline: Instant,
    /// The check of its body, if verified.
    pub check: Option<BodyCheck>,
    /// The request said `Connection: close`: the connection ends with its
    /// response, whatever the server's head says.
    pub close: bool,
}

/// How a request (or, with `intended: None`, a connection without one)
/// ended.
#[derive(Debug)]
pub enum Ended {
    Answered {
        intended: Instant,
        done: Instant,
        answer: Answer,
    },
    Failed {
        intended: Option<Instant>,
        kind: ErrorKind,
    },
}

/// The bytes of a GET request for `path`.
pub fn write_request(out: &mut Vec<u8>, path: &str, host: &str, keep_alive: bool) {
    out.clear();
    out.extend_from_slice(b"GET ");
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    out.extend_from_slice(host.as_bytes());
    if !keep_alive {
        out.extend_from_slice(b"\r\nConnection: close");
    }
    out.extend_from_slice(b"\r\n\r\n");
}

#[derive(Debug, Default)]
pub struct Connection {
    stream: Option<TcpStream>,
    connected: bool,
    /// The request's bytes, and how many are written.
    out: Vec<u8>,
    written: usize,
    /// Received bytes not consumed yet (a partial head).
    pending: Vec<u8>,
    reader: ResponseReader,
    request: Option<InFlight>,
    /// Whether the poll reports writability too: while connecting, and
    /// while a request waits for room in the socket. Otherwise readable
    /// only, so that the acknowledgement of every request (room again in
    /// the send buffer) does not wake the client for nothing.
    writable: bool,
}

impl Connection {
    pub fn is_busy(&self) -> bool {
        self.request.is_some()
    }

    /// Open the socket now (keep-alive connections are opened before the
    /// first request, during the warm-up).
    pub fn connect(
        &mut self,
        registry: &Registry,
        token: Token,
        target: SocketAddr,
    ) -> Result<(), ErrorKind> {
        let mut stream = TcpStream::connect(target).map_err(|_| ErrorKind::Connect)?;
        registry
            .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
            .map_err(|_| ErrorKind::Connect)?;
        self.stream = Some(stream);
        self.connected = false;
        self.writable = true;
        Ok(())
    }

    /// Start `request`, whose bytes `out` writes; connects first if there
    /// is no socket. An error ends the request at once (the socket closed).
    pub fn send(
        &mut self,
        registry: &Registry,
        token: Token,
        target: SocketAddr,
        request: InFlight,
        out: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), ErrorKind> {
        debug_assert!(self.request.is_none());
        if self.stream.is_none() {
            self.connect(registry, token, target)?;
        }
        out(&mut self.out);
        self.written = 0;
        self.request = Some(request);
        if self.connected {
            if let Err(kind) = self.flush(registry, token) {
                self.request = None;
                self.close();
                return Err(kind);
            }
        }
        Ok(())
    }

    /// Handle a readiness event: finish connecting, write, read. What ended
    /// is pushed to `ended`.
    pub fn on_event(
        &mut self,
        registry: &Registry,
        token: Token,
        now: Instant,
        scratch: &mut [u8],
        ended: &mut Vec<Ended>,
    ) {
        let Some(stream) = self.stream.as_ref() else {
            return; // a stale event of a socket closed in this batch
        };
        if !self.connected {
            // mio's way to learn the outcome of a non-blocking connect.
            let failed = !matches!(stream.take_error(), Ok(None));
            match stream.peer_addr() {
                Ok(_) if !failed => {
                    self.connected = true;
                    // Small requests go out at once.
                    let _ = stream.set_nodelay(true);
                }
                Err(e) if !failed && e.kind() == io::ErrorKind::NotConnected => return,
                _ => return self.fail(ErrorKind::Connect, ended),
            }
        }
        if self.written < self.out.len() && self.request.is_some() {
            if let Err(kind) = self.flush(registry, token) {
                return self.fail(kind, ended);
            }
        } else if self.writable {
            // Connected, nothing left to write: readable only from now on.
            self.interest(registry, token, false);
        }
        self.read_all(now, scratch, ended);
    }

    /// The request, if it has run past its deadline; the socket closed.
    pub fn expire(&mut self, now: Instant) -> Option<InFlight> {
        if self.request.as_ref()?.deadline > now {
            return None;
        }
        self.close();
        self.request.take()
    }

    /// The request still outstanding when the run ends.
    pub fn abandon(&mut self) -> Option<InFlight> {
        self.close();
        self.request.take()
    }

    /// Write what is left of the request; blocked, ask to hear when the
    /// socket has room.
    fn flush(&mut self, registry: &Registry, token: Token) -> Result<(), ErrorKind> {
        let Some(stream) = self.stream.as_mut() else {
            return Err(ErrorKind::Write);
        };
        while self.written < self.out.len() {
            match stream.write(&self.out[self.written..]) {
                Ok(0) => return Err(ErrorKind::Write),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.interest(registry, token, true);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(ErrorKind::Write),
            }
        }
        if self.writable {
            self.interest(registry, token, false);
        }
        Ok(())
    }

    /// Readable, and writable too when `writable`. A failed change leaves
    /// the socket reporting both, which costs only wake-ups.
    fn interest(&mut self, registry: &Registry, token: Token, writable: bool) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        let interest = if writable {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        if registry.reregister(stream, token, interest).is_ok() {
            self.writable = writable;
        }
    }

    /// Read until the socket has nothing more (edge-triggered readiness).
    fn read_all(&mut self, now: Instant, scratch: &mut [u8], ended: &mut Vec<Ended>) {
        loop {
            let Some(stream) = self.stream.as_mut() else {
                return;
            };
            match stream.read(scratch) {
                Ok(0) => return self.end_of_stream(now, ended),
                Ok(n) => {
                    if !self.received(&scratch[..n], now, ended) {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.fail(ErrorKind::Read, ended),
            }
        }
    }

    /// Parse what arrived; false once the socket is closed.
    fn received(&mut self, data: &[u8], now: Instant, ended: &mut Vec<Ended>) -> bool {
        // Usually nothing is pending and `data` is parsed where it lies.
        let joined;
        let mut rest: &[u8] = if self.pending.is_empty() {
            data
        } else {
            self.pending.extend_from_slice(data);
            joined = std::mem::take(&mut self.pending);
            &joined
        };
        loop {
            let Some(request) = self.request.as_mut() else {
                if rest.is_empty() {
                    return true;
                }
                // Bytes nobody asked for: this is not a server we can
                // trust to frame its next response.
                self.close();
                ended.push(Ended::Failed {
                    intended: None,
                    kind: ErrorKind::Parse,
                });
                return false;
            };
            match self.reader.step(rest, false, &mut request.check) {
                Err(_) => {
                    self.fail(ErrorKind::Parse, ended);
                    return false;
                }
                Ok((used, Step::More)) => {
                    self.pending.clear();
                    self.pending.extend_from_slice(&rest[used..]);
                    return true;
                }
                Ok((used, Step::Done(answer))) => {
                    rest = &rest[used..];
                    let intended = request.intended;
                    let close = answer.close || request.close;
                    self.request = None;
                    ended.push(Ended::Answered {
                        intended,
                        done: now,
                        answer,
                    });
                    if close {
                        self.close();
                        return false;
                    }
                }
            }
        }
    }

    /// The server closed: a body that ran to the end is whole; a request
    /// still waiting lost its response.
    fn end_of_stream(&mut self, now: Instant, ended: &mut Vec<Ended>) {
        if let Some(mut request) = self.request.take() {
            ended.push(match self.reader.at_end(&mut request.check) {
                Some(answer) => Ended::Answered {
                    intended: request.intended,
                    done: now,
                    answer,
                },
                None => Ended::Failed {
                    intended: Some(request.intended),
                    kind: ErrorKind::Closed,
                },
            });
        }
        self.close();
    }

    /// End the request (if any) with `kind` and close the socket; a
    /// connection without a request reports `kind` only for a failed
    /// connect (a keep-alive connection the server closed is no error).
    fn fail(&mut self, kind: ErrorKind, ended: &mut Vec<Ended>) {
        let intended = self.request.take().map(|r| r.intended);
        if intended.is_some() || kind == ErrorKind::Connect {
            ended.push(Ended::Failed { intended, kind });
        }
        self.close();
    }

    /// Drop the socket (closing it removes it from the poll) and whatever
    /// was half read; the request, if any, stays for the caller.
    fn close(&mut self) {
        self.stream = None;
        self.connected = false;
        self.pending.clear();
        self.reader = ResponseReader::new();
        self.written = 0;
        self.out.clear();
    }
}
