//! One client's connection: a non-blocking socket registered with its
//! thread's mio poll, the bytes queued for the server, and the tail of a
//! line received in part.
//!
//! What is queued goes out at once when the socket takes it; what it does
//! not take waits, and the poll reports writability only while something
//! waits (otherwise every acknowledgement would wake the client for
//! nothing). A PRIVMSG counts as sent only once its last byte is in the
//! kernel: the queue remembers where each ends.
//!
//! Lines are read into the thread's scratch buffer and handed to the
//! caller from there; only a line split across two reads is copied.

use std::collections::VecDeque;
use std::io::{self, Read as _, Write as _};
use std::net::SocketAddr;

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};

/// Written bytes kept at the head of the queue before it is compacted.
const COMPACT_AFTER: usize = 64 * 1024;
/// Longest line accepted from a server (RFC 2812: 512 bytes with CR LF;
/// some servers send longer ones with message tags, so 8 KiB).
pub const MAX_LINE: usize = 8 * 1024;

/// How a connect in progress stands.
#[derive(Debug)]
pub enum Connect {
    Pending,
    Done,
    Failed(io::Error),
}

/// What a read brought.
#[derive(Debug)]
pub enum Incoming {
    /// `n` bytes in the scratch buffer.
    Data(usize),
    /// Nothing more for now.
    Empty,
    /// The server closed the connection.
    Closed,
    Failed,
}

#[derive(Debug, Default)]
pub struct Connection {
    stream: Option<TcpStream>,
    connected: bool,
    /// Queued bytes; `written` of them are in the kernel.
    out: Vec<u8>,
    written: usize,
    /// Where each queued PRIVMSG ends in `out`.
    marks: VecDeque<usize>,
    /// The start of a line whose end has not arrived.
    partial: Vec<u8>,
    /// The poll reports writability too.
    writable: bool,
}

impl Connection {
    /// Start connecting to `target`.
    pub fn connect(
        &mut self,
        registry: &Registry,
        token: Token,
        target: SocketAddr,
    ) -> io::Result<()> {
        let mut stream = TcpStream::connect(target)?;
        registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)?;
        *self = Connection {
            stream: Some(stream),
            writable: true,
            ..Connection::default()
        };
        Ok(())
    }

    /// On an event of a socket still connecting: whether it connected.
    pub fn finish_connect(&mut self) -> Connect {
        if self.connected {
            return Connect::Done;
        }
        let Some(stream) = self.stream.as_ref() else {
            return Connect::Failed(io::ErrorKind::NotConnected.into());
        };
        // mio's way to learn the outcome of a non-blocking connect.
        match stream.take_error() {
            Ok(Some(e)) | Err(e) => return Connect::Failed(e),
            Ok(None) => {}
        }
        match stream.peer_addr() {
            Ok(_) => {
                self.connected = true;
                // Lines are small and each should leave at once.
                let _ = stream.set_nodelay(true);
                Connect::Done
            }
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Connect::Pending,
            Err(e) => Connect::Failed(e),
        }
    }

    /// Queue the bytes `fill` appends; `privmsg` marks them as one
    /// measured message.
    pub fn queue(&mut self, privmsg: bool, fill: impl FnOnce(&mut Vec<u8>)) {
        fill(&mut self.out);
        if privmsg {
            self.marks.push_back(self.out.len());
        }
    }

    /// Write what is queued (once connected); returns how many PRIVMSGs
    /// went out whole. Blocked, it asks the poll for writability.
    pub fn flush(&mut self, registry: &Registry, token: Token) -> io::Result<u64> {
        let Some(stream) = self.stream.as_mut() else {
            return Err(io::ErrorKind::NotConnected.into());
        };
        if !self.connected {
            return Ok(0);
        }
        let mut blocked = false;
        while self.written < self.out.len() {
            match stream.write(&self.out[self.written..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    blocked = true;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let mut done = 0;
        while self.marks.front().is_some_and(|&end| end <= self.written) {
            self.marks.pop_front();
            done += 1;
        }
        if self.written == self.out.len() {
            self.out.clear();
            self.written = 0;
        } else if self.written >= COMPACT_AFTER {
            self.out.drain(..self.written);
            for m in &mut self.marks {
                *m -= self.written;
            }
            self.written = 0;
        }
        if blocked != self.writable {
            let interest = if blocked {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            registry.reregister(stream, token, interest)?;
            self.writable = blocked;
        }
        Ok(done)
    }

    /// Read once into `scratch`.
    pub fn read(&mut self, scratch: &mut [u8]) -> Incoming {
        let Some(stream) = self.stream.as_mut() else {
            return Incoming::Closed;
        };
        loop {
            match stream.read(scratch) {
                Ok(0) => return Incoming::Closed,
                Ok(n) => return Incoming::Data(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Incoming::Empty,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Incoming::Failed,
            }
        }
    }

    /// The unfinished line kept from earlier reads (taken, to be put back
    /// with [`Connection::keep_partial`]).
    pub fn take_partial(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.partial)
    }

    pub fn keep_partial(&mut self, partial: Vec<u8>) {
        self.partial = partial;
    }

    /// Close the socket (deregistered by being dropped); what was queued
    /// is dropped with it.
    pub fn close(&mut self, registry: &Registry) {
        if let Some(mut s) = self.stream.take() {
            let _ = registry.deregister(&mut s);
        }
        *self = Connection::default();
    }
}

/// Split `data` into lines (CR LF or LF; the CR is dropped) and hand each
/// to `line`, joining the first to `partial` (the tail of the last read)
/// and leaving the new unfinished tail in it. A tail longer than
/// [`MAX_LINE`] is an error: no server sends such lines.
pub fn split_lines(
    partial: &mut Vec<u8>,
    data: &[u8],
    mut line: impl FnMut(&[u8]),
) -> Result<(), LineTooLong> {
    let mut rest = data;
    if !partial.is_empty() {
        match rest.iter().position(|&b| b == b'\n') {
            Some(i) => {
                partial.extend_from_slice(&rest[..i]);
                line(trim_cr(partial));
                partial.clear();
                rest = &rest[i + 1..];
            }
            None => {
                partial.extend_from_slice(rest);
                return check_len(partial);
            }
        }
    }
    while let Some(i) = rest.iter().position(|&b| b == b'\n') {
        line(trim_cr(&rest[..i]));
        rest = &rest[i + 1..];
    }
    partial.extend_from_slice(rest);
    check_len(partial)
}

/// A line longer than [`MAX_LINE`] arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineTooLong;

fn check_len(partial: &[u8]) -> Result<(), LineTooLong> {
    if partial.len() > MAX_LINE {
        Err(LineTooLong)
    } else {
        Ok(())
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(partial: &mut Vec<u8>, data: &[u8]) -> Vec<String> {
        let mut got = Vec::new();
        split_lines(partial, data, |l| {
            got.push(String::from_utf8_lossy(l).into_owned())
        })
        .unwrap();
        got
    }

    #[test]
    fn lines_split_across_reads_are_joined() {
        let mut p = Vec::new();
        assert_eq!(lines(&mut p, b"PING :a\r\n:x 001"), vec!["PING :a"]);
        assert_eq!(lines(&mut p, b" s1 :hi"), Vec::<String>::new());
        assert_eq!(lines(&mut p, b"\r"), Vec::<String>::new());
        assert_eq!(
            lines(&mut p, b"\nA\nB\r\n"),
            vec![":x 001 s1 :hi", "A", "B"]
        );
        assert!(p.is_empty());
        let mut p = vec![b'x'; MAX_LINE];
        assert_eq!(split_lines(&mut p, b"yy", |_| {}), Err(LineTooLong));
    }

    #[test]
    fn a_privmsg_counts_once_its_last_byte_is_written() {
        let mut poll = mio::Poll::new().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = Connection::default();
        c.connect(poll.registry(), Token(0), listener.local_addr().unwrap())
            .unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let mut events = mio::Events::with_capacity(4);
        let start = std::time::Instant::now();
        while !matches!(c.finish_connect(), Connect::Done) {
            assert!(start.elapsed().as_secs() < 5);
            poll.poll(&mut events, Some(std::time::Duration::from_millis(10)))
                .unwrap();
        }
        c.queue(false, |o| o.extend_from_slice(b"PONG :x\r\n"));
        c.queue(true, |o| o.extend_from_slice(b"PRIVMSG #c :a\r\n"));
        c.queue(true, |o| o.extend_from_slice(b"PRIVMSG #c :b\r\n"));
        assert_eq!(c.flush(poll.registry(), Token(0)).unwrap(), 2);
        assert_eq!(c.flush(poll.registry(), Token(0)).unwrap(), 0);
        let mut got = [0u8; 64];
        let mut n = 0;
        while n < 39 {
            n += std::io::Read::read(&mut server, &mut got[n..]).unwrap();
        }
        assert_eq!(&got[..n], b"PONG :x\r\nPRIVMSG #c :a\r\nPRIVMSG #c :b\r\n");
        drop(server);
        let mut scratch = [0u8; 16];
        let start = std::time::Instant::now();
        loop {
            match c.read(&mut scratch) {
                Incoming::Closed => break,
                Incoming::Empty => std::thread::sleep(std::time::Duration::from_millis(1)),
                other => panic!("{other:?}"),
            }
            assert!(start.elapsed().as_secs() < 5);
        }
        c.close(poll.registry());
        assert!(matches!(c.read(&mut scratch), Incoming::Closed));
    }
}
