//! Socket calls the standard library and nix do not offer: a send that
//! tells the kernel more data follows (`MSG_MORE`), so a response's head
//! and the file body `sendfile` sends after it leave in one TCP segment
//! for a small file, as nginx's `tcp_nopush` (TCP_CORK) does, instead of
//! two packets and twice the receive work on the client.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `send(fd, buf, MSG_MORE | MSG_NOSIGNAL)`: bytes sent (a short count or
/// `WouldBlock` on a non-blocking socket, as `write`); a closed peer is an
/// `EPIPE` error, never a SIGPIPE.
pub fn send_more(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes for the duration of the
    // call and the kernel only reads it; `fd` is an open descriptor borrowed
    // for the call.
    let n = unsafe {
        libc::send(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_MORE | libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;

    #[test]
    fn a_corked_head_arrives_with_what_follows() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server, _) = l.accept().unwrap();
        assert_eq!(send_more(server.as_fd(), b"head ").unwrap(), 5);
        std::io::Write::write_all(&mut server, b"body").unwrap();
        drop(server);
        let mut got = String::new();
        client.read_to_string(&mut got).unwrap();
        assert_eq!(got, "head body");
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        drop(c);
        // A closed peer: an error (after the RST), never a signal.
        let mut failed = false;
        for _ in 0..100 {
            if send_more(s.as_fd(), &[0; 4096]).is_err() {
                failed = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(failed);
    }
}
