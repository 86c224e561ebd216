//! [`UdpTransport`]: the real network under an [`Endpoint`], one UDP
//! socket per rank, with std and nix's safe wrappers (no `unsafe`).
//!
//! It adds what the endpoint leaves out on purpose: the socket, the peers'
//! addresses, the clock, and the check that a datagram comes from the
//! address of the rank it claims. Its receive buffer is made in `bind`, and
//! `sendto`/`recvmsg` with an address on the stack do not allocate, so
//! `drain`, `send`, `tick` and `flush_acks` do not either: a SIGIO handler
//! may call them.
//!
//! Every send and every read but one passes `MSG_DONTWAIT`, so none of them
//! blocks whatever the socket's mode. The one is [`UdpTransport::receive_one`]:
//! a thread that has the socket to itself sleeps *in* the read, until a
//! datagram arrives or a timeout passes — one system call per wake-up, as
//! in a plain blocking ping-pong, instead of `poll` and then a read (and a
//! last read that finds nothing). std's `recv_from` takes no flags, hence
//! nix. Waiting otherwise is left to the caller (poll the [`AsRawFd`]
//! descriptor, or SIGIO), apart from a simple
//! [`UdpTransport::wait_readable`].

use std::io::{self, IoSliceMut};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::{Duration, Instant};

use nix::sys::socket::{MsgFlags, SockaddrStorage};

use crate::endpoint::{Endpoint, SendError};
use crate::wire::{Header, MAX_DATAGRAM};

/// One rank's UDP socket, its peers' addresses and its clock.
#[derive(Debug)]
pub struct UdpTransport {
    /// The socket and what sending needs (apart from the buffer, so a
    /// datagram read into `buf` can be answered while it is borrowed).
    out: Sender,
    /// The read timeout [`UdpTransport::receive_one`] last set (`None`:
    /// the socket is still non-blocking, as `bind` made it).
    read_timeout: Option<Duration>,
    /// One byte longer than the largest valid datagram, so a longer one
    /// shows up as too long (and is rejected) instead of being cut to a
    /// valid-looking length.
    buf: Vec<u8>,
    /// The zero of [`UdpTransport::now`].
    epoch: Instant,
    recv_errors: u64,
}

/// The socket, where each rank is, and the sends that failed.
#[derive(Debug)]
struct Sender {
    socket: UdpSocket,
    /// Address of each rank, indexed by rank.
    peers: Vec<SocketAddr>,
    /// The rank the socket is connected to, if any: sent to with `send`.
    connected: Option<usize>,
    /// Datagrams whose transmission failed.
    errors: u64,
}

impl Sender {
    /// Sends `datagram` to rank `to` without ever blocking; any failure (a
    /// full socket buffer among them) is a lost datagram, counted.
    fn transmit(&mut self, to: usize, datagram: &[u8]) {
        let fd = self.socket.as_raw_fd();
        let flags = MsgFlags::MSG_DONTWAIT;
        let sent = match self.peers.get(to) {
            Some(_) if self.connected == Some(to) => {
                nix::sys::socket::send(fd, datagram, flags).is_ok()
            }
            Some(&addr) => {
                nix::sys::socket::sendto(fd, datagram, &SockaddrStorage::from(addr), flags).is_ok()
            }
            None => false,
        };
        if !sent {
            self.errors += 1;
        }
    }
}

impl UdpTransport {
    /// Binds a non-blocking UDP socket to `addr` (port 0 picks a free
    /// port; see [`UdpTransport::local_addr`]).
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpTransport> {
        let socket = UdpSocket::bind(addr)?;
        socket.set_nonblocking(true)?;
        Ok(UdpTransport {
            out: Sender {
                socket,
                peers: Vec::new(),
                connected: None,
                errors: 0,
            },
            read_timeout: None,
            buf: vec![0; MAX_DATAGRAM + 1],
            epoch: Instant::now(),
            recv_errors: 0,
        })
    }

    /// The address the socket is bound to, for the other ranks' peer lists.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.out.socket.local_addr()
    }

    /// Sets every rank's address, ours included (index = rank). Call it
    /// once, before traffic (until then every datagram is a stranger's):
    /// apart from `bind`, it is the only call that may allocate.
    pub fn set_peers(&mut self, peers: Vec<SocketAddr>) {
        self.out.peers = peers;
    }

    /// Connects the socket to rank `to`, the only other rank there is
    /// (call it after [`UdpTransport::set_peers`], for a job of two ranks):
    /// the kernel then keeps the route instead of looking it up for every
    /// datagram sent and received (about 1.4 µs of a 4 KiB round trip on
    /// loopback, measured beside a plain ping-pong), and itself drops a
    /// datagram from any other address — which is then not counted as a
    /// stranger, since it never arrives here.
    pub fn connect_peer(&mut self, to: usize) -> io::Result<()> {
        let addr =
            *self.out.peers.get(to).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("no rank {to}"))
            })?;
        self.out.socket.connect(addr)?;
        self.out.connected = Some(to);
        Ok(())
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
        self.out.transmit(to, datagram);
    }

    /// [`Endpoint::send`] at the current time, through this socket.
    pub fn send(
        &mut self,
        endpoint: &mut Endpoint,
        to: usize,
        msg: &[u8],
    ) -> Result<(), SendError> {
        let now = self.now();
        let out = &mut self.out;
        endpoint.send(to, msg, now, &mut |to, d| out.transmit(to, d))
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
        while self.read_one(MsgFlags::MSG_DONTWAIT, endpoint, deliver) {
            read += 1;
        }
        read
    }

    /// Sleeps in a read until one datagram arrives (handled as [`drain`]
    /// handles each) or `timeout` passes; returns whether one was read. The
    /// first call puts the socket in blocking mode for good (every other
    /// read and send passes `MSG_DONTWAIT`, so they are unaffected); a
    /// timeout different from the last one costs one more system call, so
    /// pass a steady one. For a thread that has the socket to itself: two
    /// threads sleeping in it would each take datagrams the other waits
    /// for. A zero `timeout` reads without waiting.
    ///
    /// [`drain`]: UdpTransport::drain
    pub fn receive_one(
        &mut self,
        endpoint: &mut Endpoint,
        timeout: Duration,
        deliver: &mut dyn FnMut(usize, &[u8]),
    ) -> bool {
        if timeout.is_zero() {
            return self.read_one(MsgFlags::MSG_DONTWAIT, endpoint, deliver);
        }
        if self.set_read_timeout(timeout).is_err() {
            // The socket would not block (no known cause on a UDP
            // socket): nap instead of sleeping in the read, so a caller
            // looping on this does not spin.
            std::thread::sleep(timeout.min(Duration::from_micros(200)));
            return self.read_one(MsgFlags::MSG_DONTWAIT, endpoint, deliver);
        }
        self.read_one(MsgFlags::empty(), endpoint, deliver)
    }

    /// Blocking mode with `timeout` as the read timeout (a zero read
    /// timeout would mean "forever" to the OS; callers pass none).
    fn set_read_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        if self.read_timeout == Some(timeout) {
            return Ok(());
        }
        if self.read_timeout.is_none() {
            self.out.socket.set_nonblocking(false)?;
        }
        self.out.socket.set_read_timeout(Some(timeout))?;
        self.read_timeout = Some(timeout);
        Ok(())
    }

    /// One read with `flags`, the datagram handed to the endpoint; `false`
    /// when nothing was there (or the read failed otherwise).
    fn read_one(
        &mut self,
        flags: MsgFlags,
        endpoint: &mut Endpoint,
        deliver: &mut dyn FnMut(usize, &[u8]),
    ) -> bool {
        let (len, from) = loop {
            let mut iov = [IoSliceMut::new(&mut self.buf)];
            match nix::sys::socket::recvmsg::<SockaddrStorage>(
                self.out.socket.as_raw_fd(),
                &mut iov,
                None,
                flags,
            ) {
                Ok(got) => break (got.bytes, got.address.and_then(std_addr)),
                Err(errno) => match io::Error::from(errno).kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => return false,
                    // An ICMP error about an earlier send, or a signal:
                    // nothing to read from it, go on.
                    io::ErrorKind::Interrupted
                    | io::ErrorKind::ConnectionRefused
                    | io::ErrorKind::ConnectionReset => self.recv_errors += 1,
                    _ => {
                        self.recv_errors += 1;
                        return false;
                    }
                },
            }
        };
        let datagram = &self.buf[..len];
        // Malformed datagrams go on to the endpoint, which counts them.
        if let Ok((header, _)) = Header::decode(datagram) {
            if from.is_none() || self.out.peers.get(usize::from(header.src)) != from.as_ref() {
                endpoint.count_stranger();
                return true;
            }
        }
        let now = self.now();
        let out = &mut self.out;
        endpoint.receive(datagram, now, &mut |to, d| out.transmit(to, d), deliver);
        true
    }

    /// [`Endpoint::tick`] at the current time, through this socket.
    pub fn tick(&mut self, endpoint: &mut Endpoint) {
        let now = self.now();
        let out = &mut self.out;
        endpoint.tick(now, &mut |to, d| out.transmit(to, d));
    }

    /// [`Endpoint::flush_acks`] at the current time, through this socket.
    pub fn flush_acks(&mut self, endpoint: &mut Endpoint) {
        let now = self.now();
        let out = &mut self.out;
        endpoint.flush_acks(now, &mut |to, d| out.transmit(to, d));
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
    /// whether one is waiting. Like [`UdpTransport::receive_one`] it sleeps
    /// in a (peeking) read, so the same rule holds: use it only in a thread
    /// that has the socket to itself — otherwise poll the [`AsRawFd`]
    /// descriptor instead.
    pub fn wait_readable(&mut self, timeout: Duration) -> io::Result<bool> {
        let mut probe = [0u8; 1];
        if timeout.is_zero() {
            return peeked(self.peek(&mut probe, MsgFlags::MSG_DONTWAIT));
        }
        self.set_read_timeout(timeout)?;
        peeked(self.peek(&mut probe, MsgFlags::empty()))
    }

    fn peek(&self, probe: &mut [u8], flags: MsgFlags) -> io::Result<usize> {
        let mut iov = [IoSliceMut::new(probe)];
        nix::sys::socket::recvmsg::<()>(
            self.out.socket.as_raw_fd(),
            &mut iov,
            None,
            flags | MsgFlags::MSG_PEEK,
        )
        .map(|got| got.bytes)
        .map_err(io::Error::from)
    }

    /// Datagrams whose transmission failed (counted as lost).
    pub fn send_errors(&self) -> u64 {
        self.out.errors
    }

    /// Failed reads other than "nothing waiting" (ICMP errors, signals).
    pub fn recv_errors(&self) -> u64 {
        self.recv_errors
    }

    /// The socket itself, e.g. to register it with the caller's poller.
    pub fn socket(&self) -> &UdpSocket {
        &self.out.socket
    }
}

impl AsRawFd for UdpTransport {
    /// The socket's descriptor, for callers that wait with poll or SIGIO.
    fn as_raw_fd(&self) -> RawFd {
        self.out.socket.as_raw_fd()
    }
}

impl AsFd for UdpTransport {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.out.socket.as_fd()
    }
}

/// A sender's address as std spells it (UDP senders are IPv4 or IPv6).
fn std_addr(addr: SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = addr.as_sockaddr_in() {
        return Some(SocketAddr::V4(SocketAddrV4::from(*v4)));
    }
    addr.as_sockaddr_in6()
        .map(|v6| SocketAddr::V6(SocketAddrV6::from(*v6)))
}

/// The outcome of a readiness peek: a datagram (or a pending error, which
/// the next read consumes) is there, or nothing came in time.
fn peeked(result: io::Result<usize>) -> io::Result<bool> {
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
