//! Whether an HTTP server answers: one request on a connection of its own,
//! waited for until a whole status line (`HTTP/1.1 200 OK`) comes back.
//!
//! A server that accepts connections is not yet one that answers them:
//! nginx's master binds and listens before its worker processes exist, so
//! a connection succeeds (it waits in the listen backlog) long before any
//! request is read, and under emulation the gap is hundreds of
//! milliseconds. A measured window that starts in that gap measures the
//! server's start, not its serving. The executor asks [`answer`] before a
//! server sample's window opens.
//!
//! Blocking, on a plain `std` socket: one request, read in short slices so
//! the caller can give up between them (Ctrl-C, the server ended).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// How long one read waits before the caller is asked whether to go on.
const SLICE: Duration = Duration::from_millis(20);
/// The longest status line read: past it the bytes are not HTTP.
const MAX_LINE: usize = 8 * 1024;

/// Why a probe got no status line.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Not even a connection (nobody listening yet, or refused).
    #[error("cannot connect: {0}")]
    Connect(io::Error),
    /// Connected, but the request could not be written.
    #[error("cannot send the request: {0}")]
    Write(io::Error),
    /// Connected and sent, but no status line within the time given.
    #[error("no answer within {:.1} s", .0.as_secs_f64())]
    Silent(Duration),
    /// The server closed or reset the connection without answering.
    #[error("the connection was closed without an answer")]
    Closed,
    /// Something came back, but not an HTTP status line.
    #[error("not an HTTP answer: {0:?}")]
    NotHttp(String),
    /// The caller gave up.
    #[error("called off")]
    CalledOff,
    #[error("reading the answer: {0}")]
    Read(io::Error),
}

impl ProbeError {
    /// Whether the connection was made (the server accepts connections,
    /// even if it did not answer).
    pub fn connected(&self) -> bool {
        !matches!(self, ProbeError::Connect(_))
    }
}

/// Send `GET path` (`Connection: close`) to `target` and wait, at most
/// `limit` from now, for the whole status line of its answer; its status
/// code when it came. `go_on` is asked between reads (every 20 ms or
/// so): false gives up ([`ProbeError::CalledOff`]).
pub fn answer(
    target: SocketAddr,
    host: &str,
    path: &str,
    limit: Duration,
    mut go_on: impl FnMut() -> bool,
) -> Result<u16, ProbeError> {
    let deadline = Instant::now() + limit;
    let left = || deadline.saturating_duration_since(Instant::now());
    let mut stream = TcpStream::connect_timeout(&target, left().max(Duration::from_millis(1)))
        .map_err(ProbeError::Connect)?;
    let _ = stream.set_nodelay(true);
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream
        .set_write_timeout(Some(left().max(Duration::from_millis(1))))
        .and_then(|()| stream.write_all(request.as_bytes()))
        .map_err(ProbeError::Write)?;
    let mut got: Vec<u8> = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        if let Some(end) = got.windows(2).position(|w| w == b"\r\n") {
            return status(&got[..end]);
        }
        if got.len() > MAX_LINE {
            return status(&got[..MAX_LINE]);
        }
        let wait = left();
        if wait.is_zero() {
            return Err(ProbeError::Silent(limit));
        }
        if !go_on() {
            return Err(ProbeError::CalledOff);
        }
        stream
            .set_read_timeout(Some(wait.min(SLICE)))
            .map_err(ProbeError::Read)?;
        match stream.read(&mut buf) {
            Ok(0) if got.is_empty() => return Err(ProbeError::Closed),
            Ok(0) => return status(&got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
                ) =>
            {
                return Err(ProbeError::Closed)
            }
            Err(e) => return Err(ProbeError::Read(e)),
        }
    }
}

/// The status code of a status line (`HTTP/1.x NNN reason`).
fn status(line: &[u8]) -> Result<u16, ProbeError> {
    let text = String::from_utf8_lossy(line);
    let mut words = text.split(' ');
    let version = words.next().unwrap_or("");
    let code = words.next().unwrap_or("");
    match code.parse::<u16>() {
        Ok(c) if version.starts_with("HTTP/1.") && (100..=999).contains(&c) && code.len() == 3 => {
            Ok(c)
        }
        _ => Err(ProbeError::NotHttp(text.chars().take(80).collect())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;

    /// A server that accepts at once and answers each connection's request
    /// after `delay` with `reply` (None: never answers, holds it open).
    fn server(
        delay: Duration,
        reply: Option<&'static [u8]>,
    ) -> (SocketAddr, thread::JoinHandle<()>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut b = [0u8; 1024];
            let _ = c.read(&mut b);
            thread::sleep(delay);
            if let Some(r) = reply {
                let _ = c.write_all(r);
            }
        });
        (addr, h)
    }

    #[test]
    fn a_status_line_is_an_answer_whatever_its_code() {
        let (addr, h) = server(
            Duration::from_millis(150),
            Some(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"),
        );
        let t = Instant::now();
        let s = answer(addr, "x", "/a", Duration::from_secs(5), || true).unwrap();
        assert_eq!(s, 404);
        assert!(t.elapsed() >= Duration::from_millis(150));
        h.join().unwrap();
    }

    #[test]
    fn silence_closing_and_noise_are_not_answers() {
        let (addr, h) = server(Duration::from_millis(400), None);
        let e = answer(addr, "x", "/", Duration::from_millis(200), || true).unwrap_err();
        assert!(matches!(e, ProbeError::Silent(_)) && e.connected(), "{e}");
        h.join().unwrap();

        let (addr, h) = server(Duration::ZERO, None);
        let e = answer(addr, "x", "/", Duration::from_secs(5), || true).unwrap_err();
        assert!(matches!(e, ProbeError::Closed), "{e}");
        h.join().unwrap();

        let (addr, h) = server(Duration::ZERO, Some(b"SSH-2.0-OpenSSH\r\n"));
        let e = answer(addr, "x", "/", Duration::from_secs(5), || true).unwrap_err();
        assert!(matches!(e, ProbeError::NotHttp(_)), "{e}");
        h.join().unwrap();

        let (addr, h) = server(Duration::from_millis(300), None);
        let mut asked = 0;
        let e = answer(addr, "x", "/", Duration::from_secs(5), || {
            asked += 1;
            asked < 3
        })
        .unwrap_err();
        assert!(matches!(e, ProbeError::CalledOff), "{e}");
        h.join().unwrap();

        // Nobody listening.
        let free = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let e = answer(free, "x", "/", Duration::from_secs(1), || true).unwrap_err();
        assert!(!e.connected(), "{e}");
    }
}
