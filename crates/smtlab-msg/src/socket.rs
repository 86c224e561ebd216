//! [`UdpTransport`]: the real network under an [`Endpoint`], one
//! non-blocking UDP socket per rank, with std only (no `unsafe`, no libc).
//!
//! It adds what the endpoint leaves out on purpose: the socket, the peers'
//! addresses, the clock, and the check that a datagram comes from the
//! address of the rank it claims. Its receive buffer is made in `bind`, and
//! `send_to`/`recv_from` with a `SocketAddr` do not allocate, so `drain`,
//! `send`, `tick` and `flush_acks` do not either: a SIGIO handler may call
//! them. Waiting for traffic is left to the caller (poll the
//! [`AsRawFd`] descriptor, or SIGIO), apart from a simple
//! [`UdpTransport::wait_readable`] for a thread that has the socket to
//! itself.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
#[cfg(unix)]
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::{Duration, Instant};

use crate::endpoint::{Endpoint, SendError};
use crate::wire::{Header, MAX_DATAGRAM};

/// One rank's UDP socket, its peers' addresses and its clock.
#[derive(Debug)]
pub struct UdpTransport {
    socket: UdpSocket,
    /// Address of each rank, indexed by rank.
    peers: Vec<SocketAddr>,
    /// One byte longer than the largest valid datagram, so a longer one
    /// shows up as too long (and is rejected) instead of being cut to a
    /// valid-looking length.
    buf: Vec<u8>,
    /// The zero of [`UdpTransport::now`].
    epoch: Instant,
    send_errors: u64,
    recv_errors: u64,
}

impl UdpTransport {
    /// Binds a non-blocking UDP socket to `addr` (port 0 picks a free
    /// port; see [`UdpTransport::local_addr`]).
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpTransport> {
        let socket = UdpSocket::bind(addr)?;
        socket.set_nonblocking(true)?;
        Ok(UdpTransport {
            socket,
            peers: Vec::new(),
            buf: vec![0; MAX_DATAGRAM + 1],
            epoch: Instant::now(),
            send_errors: 0,
            recv_errors: 0,
        })
    }

    /// The address the socket is bound to, for the other ranks' peer lists.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Sets every rank's address, ours included (index = rank). Call it
    /// once, before traffic (until then every datagram is a stranger's):
    /// apart from `bind`, it is the only call that may allocate.
    pub fn set_peers(&mut self, peers: Vec<SocketAddr>) {
        self.peers = peers;
    }

    /// Monotonic nanoseconds since `bind`: the `now` to pass to every
    /// call of the endpoint this transport serves.
    pub fn now(&self) -> u64 {
        // u64 nanoseconds last 584 years.
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Transmits one datagram to rank `to`: the sink to hand an endpoint
    /// (`&mut |to, d| transport.send_to(to, d)`). A failed send (full
    /// socket buffer, unreachable peer, unknown rank) counts as a lost
    /// datagram — retransmission repairs it — and shows up in
    /// [`UdpTransport::send_errors`], never as an error.
    pub fn send_to(&mut self, to: usize, datagram: &[u8]) {
        transmit(
            &self.socket,
            &self.peers,
            &mut self.send_errors,
            to,
            datagram,
        );
    }

    /// [`Endpoint::send`] at the current time, through this socket.
    pub fn send(
        &mut self,
        endpoint: &mut Endpoint,
        to: usize,
        msg: &[u8],
    ) -> Result<(), SendError> {
        let now = self.now();
        let (socket, peers, errors) = (&self.socket, &self.peers, &mut self.send_errors);
        endpoint.send(to, msg, now, &mut |to, d| {
            transmit(socket, peers, errors, to, d)
        })
    }

    /// Reads every datagram waiting on the socket (until it would block),
    /// hands each to `endpoint.receive` — acks and replies going out
    /// through this socket, messages to `deliver(from, message)` — and
    /// returns how many datagrams were read. A datagram whose sender
    /// address is not the address of the rank its header claims is counted
    /// as a stranger and dropped.
    pub fn drain(
        &mut self,
        endpoint: &mut Endpoint,
        deliver: &mut dyn FnMut(usize, &[u8]),
    ) -> usize {
        let mut read = 0;
        loop {
            let (len, from) = match self.socket.recv_from(&mut self.buf) {
                Ok(got) => got,
                Err(e) => match e.kind() {
                    io::ErrorKind::WouldBlock => break,
                    // An ICMP error about an earlier send, or a signal:
                    // nothing to read from it, go on.
                    io::ErrorKind::Interrupted
                    | io::ErrorKind::ConnectionRefused
                    | io::ErrorKind::ConnectionReset => {
                        self.recv_errors += 1;
                        continue;
                    }
                    _ => {
                        self.recv_errors += 1;
                        break;
                    }
                },
            };
            read += 1;
            let datagram = &self.buf[..len];
            // Malformed datagrams go on to the endpoint, which counts them.
            if let Ok((header, _)) = Header::decode(datagram) {
                if self.peers.get(usize::from(header.src)) != Some(&from) {
                    endpoint.count_stranger();
                    continue;
                }
            }
            let now = self.now();
            let (socket, peers, errors) = (&self.socket, &self.peers, &mut self.send_errors);
            endpoint.receive(
                datagram,
                now,
                &mut |to, d| transmit(socket, peers, errors, to, d),
                deliver,
            );
        }
        read
    }

    /// [`Endpoint::tick`] at the current time, through this socket.
    pub fn tick(&mut self, endpoint: &mut Endpoint) {
        let now = self.now();
        let (socket, peers, errors) = (&self.socket, &self.peers, &mut self.send_errors);
        endpoint.tick(now, &mut |to, d| transmit(socket, peers, errors, to, d));
    }

    /// [`Endpoint::flush_acks`] at the current time, through this socket.
    pub fn flush_acks(&mut self, endpoint: &mut Endpoint) {
        let now = self.now();
        let (socket, peers, errors) = (&self.socket, &self.peers, &mut self.send_errors);
        endpoint.flush_acks(now, &mut |to, d| transmit(socket, peers, errors, to, d));
    }

    /// How long until the endpoint's next deadline (zero if it has passed),
    /// or `None` if it has none: the timeout for a wait.
    pub fn until_deadline(&self, endpoint: &Endpoint) -> Option<Duration> {
        let now = self.now();
        endpoint
            .next_deadline()
            .map(|d| Duration::from_nanos(d.saturating_sub(now)))
    }

    /// Waits until a datagram is waiting or `timeout` passes; returns
    /// whether one is waiting. It switches the socket to blocking mode for
    /// the wait, which changes it for every descriptor that shares it: use
    /// it only in a thread that has the socket to itself (no clone of the
    /// descriptor read elsewhere meanwhile) — otherwise poll the
    /// [`AsRawFd`] descriptor instead.
    pub fn wait_readable(&mut self, timeout: Duration) -> io::Result<bool> {
        let mut probe = [0u8; 1];
        if timeout.is_zero() {
            // A zero read timeout means "forever" to the OS; peek instead.
            return peeked(self.socket.peek_from(&mut probe));
        }
        self.socket.set_nonblocking(false)?;
        let set = self.socket.set_read_timeout(Some(timeout));
        let result = set.and_then(|()| peeked(self.socket.peek_from(&mut probe)));
        // Restore non-blocking reads whatever happened, before reporting.
        self.socket.set_nonblocking(true)?;
        result
    }

    /// Datagrams whose transmission failed (counted as lost).
    pub fn send_errors(&self) -> u64 {
        self.send_errors
    }

    /// Failed reads other than "nothing waiting" (ICMP errors, signals).
    pub fn recv_errors(&self) -> u64 {
        self.recv_errors
    }

    /// The socket itself, e.g. to register it with the caller's poller.
    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }
}

#[cfg(unix)]
impl AsRawFd for UdpTransport {
    /// The socket's descriptor, for callers that wait with poll or SIGIO.
    fn as_raw_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }
}

#[cfg(unix)]
impl AsFd for UdpTransport {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

/// Sends `datagram` to rank `to`'s address; any failure is a lost
/// datagram, counted in `errors`.
fn transmit(
    socket: &UdpSocket,
    peers: &[SocketAddr],
    errors: &mut u64,
    to: usize,
    datagram: &[u8],
) {
    let sent = match peers.get(to) {
        Some(addr) => socket.send_to(datagram, addr).is_ok(),
        None => false,
    };
    if !sent {
        *errors += 1;
    }
}

/// The outcome of a readiness peek: a datagram (or a pending error, which
/// the next read consumes) is there, or nothing came in time.
fn peeked(result: io::Result<(usize, SocketAddr)>) -> io::Result<bool> {
    match result {
        Ok(_) => Ok(true),
        Err(e) => match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted => {
                Ok(false)
            }
            io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionReset => Ok(true),
            _ => Err(e),
        },
    }
}
