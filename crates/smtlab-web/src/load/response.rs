//! Reading one HTTP/1.x response at a time from the bytes a connection
//! receives, however they are split: the head with `httparse`, then the
//! body framed by `Content-Length`, chunked transfer coding, or the end of
//! the connection (RFC 9112 §6.3). Bodies are fed to a
//! [`BodyCheck`](crate::fileset::BodyCheck) as they pass, never kept.
//!
//! Pure: the caller reads the socket and hands over what it got; what a
//! step did not consume (a partial head, the start of a pipelined response)
//! the caller keeps and offers again with more bytes.

use crate::fileset::{BodyCheck, BodyMismatch};

/// A response head longer than this is not HTTP we can parse (`parse`).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Header lines a response may have.
const MAX_HEADERS: usize = 64;

/// A whole response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// Bytes on the wire: head, body and chunk framing.
    pub bytes: u64,
    /// The server will close the connection after it.
    pub close: bool,
    /// The verdict of the body check, when there was one (a 200 with a
    /// check given).
    pub body: Option<Result<(), BodyMismatch>>,
}

/// What one step found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Everything offered was consumed or must be offered again with more
    /// bytes: read more.
    More,
    /// A response ended.
    Done(Answer),
}

/// Not an HTTP response (or one we refuse to parse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed HTTP response")]
pub struct Malformed;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// Waiting for (the rest of) a head.
    Head,
    /// This many body bytes to go.
    Length(u64),
    /// Chunked: a chunk-size line next.
    ChunkSize,
    /// Chunked: this many bytes of chunk data to go, then CRLF.
    ChunkData(u64),
    /// Chunked: the CRLF after a chunk's data.
    ChunkEnd,
    /// Chunked: trailer lines after the last chunk, until an empty line.
    Trailer,
    /// No length: the body is everything until the server closes.
    UntilClose,
}

/// The reader of one connection's responses.
#[derive(Debug, Clone)]
pub struct ResponseReader {
    framing: Framing,
    status: u16,
    close: bool,
    bytes: u64,
    /// Whether the body is checked (a 200 to a request with a check).
    checking: bool,
}

impl Default for ResponseReader {
    fn default() -> Self {
        ResponseReader::new()
    }
}

impl ResponseReader {
    pub fn new() -> ResponseReader {
        ResponseReader {
            framing: Framing::Head,
            status: 0,
            close: false,
            bytes: 0,
            checking: false,
        }
    }

    /// Consume what it can of `data`, the bytes received and not consumed
    /// yet. `head_request`: the request was HEAD (no body follows). `check`
    /// is the request's body check; it is fed when the answer is a 200.
    /// Returns the bytes consumed and what they completed.
    pub fn step(
        &mut self,
        data: &[u8],
        head_request: bool,
        check: &mut Option<BodyCheck>,
    ) -> Result<(usize, Step), Malformed> {
        let mut used = 0;
        loop {
            let rest = &data[used..];
            match self.framing {
                Framing::Head => {
                    let Some(n) = self.head(rest, head_request)? else {
                        return Ok((used, Step::More));
                    };
                    used += n;
                    self.bytes += n as u64;
                    if self.framing == Framing::Head {
                        // 1xx: an interim head; the real one follows.
                        continue;
                    }
                    // Only a 200 carries the file's bytes.
                    self.checking = self.status == 200 && check.is_some();
                    if self.framing == Framing::Length(0) {
                        return Ok((used, Step::Done(self.finish(check))));
                    }
                }
                Framing::Length(left) => {
                    let n = (left.min(rest.len() as u64)) as usize;
                    self.body(&rest[..n], check);
                    used += n;
                    self.bytes += n as u64;
                    if left == n as u64 {
                        return Ok((used, Step::Done(self.finish(check))));
                    }
                    self.framing = Framing::Length(left - n as u64);
                    return Ok((used, Step::More));
                }
                Framing::ChunkSize => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((n, size))) => {
                        used += n;
                        self.bytes += n as u64;
                        self.framing = if size == 0 {
                            Framing::Trailer
                        } else {
                            Framing::ChunkData(size)
                        };
                    }
                    Ok(httparse::Status::Partial) => {
                        return if rest.len() > MAX_HEAD_BYTES {
                            Err(Malformed)
                        } else {
                            Ok((used, Step::More))
                        };
                    }
                    Err(_) => return Err(Malformed),
                },
                Framing::ChunkData(left) => {
                    let n = (left.min(rest.len() as u64)) as usize;
                    self.body(&rest[..n], check);
                    used += n;
                    self.bytes += n as u64;
                    if left > n as u64 {
                        self.framing = Framing::ChunkData(left - n as u64);
                        return Ok((used, Step::More));
                    }
                    self.framing = Framing::ChunkEnd;
                }
                Framing::ChunkEnd => {
                    if rest.len() < 2 {
                        return Ok((used, Step::More));
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(Malformed);
                    }
                    used += 2;
                    self.bytes += 2;
                    self.framing = Framing::ChunkSize;
                }
                Framing::Trailer => {
                    let Some(end) = rest.iter().position(|&b| b == b'\n') else {
                        return if rest.len() > MAX_HEAD_BYTES {
                            Err(Malformed)
                        } else {
                            Ok((used, Step::More))
                        };
                    };
                    let line = &rest[..end];
                    used += end + 1;
                    self.bytes += end as u64 + 1;
                    if line.is_empty() || line == b"\r" {
                        return Ok((used, Step::Done(self.finish(check))));
                    }
                }
                Framing::UntilClose => {
                    self.body(rest, check);
                    self.bytes += rest.len() as u64;
                    return Ok((data.len(), Step::More));
                }
            }
        }
    }

    /// The server closed the connection: the end of a body that runs until
    /// then, else `None` (the response, if one was started, is lost).
    pub fn at_end(&mut self, check: &mut Option<BodyCheck>) -> Option<Answer> {
        (self.framing == Framing::UntilClose).then(|| self.finish(check))
    }

    /// Parse a head at the start of `data`: `None` if it is not all there.
    fn head(&mut self, data: &[u8], head_request: bool) -> Result<Option<usize>, Malformed> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let n = match response.parse(data) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if data.len() <= MAX_HEAD_BYTES => return Ok(None),
            _ => return Err(Malformed),
        };
        let status = response.code.ok_or(Malformed)?;
        let minor = response.version.ok_or(Malformed)?;
        let mut close = minor == 0;
        let mut length = None;
        let mut chunked = false;
        for h in response.headers.iter() {
            let value = std::str::from_utf8(h.value).map_err(|_| Malformed)?.trim();
            if h.name.eq_ignore_ascii_case("content-length") {
                let n: u64 = value.parse().map_err(|_| Malformed)?;
                if length.is_some_and(|l| l != n) {
                    return Err(Malformed);
                }
                length = Some(n);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value
                    .rsplit(',')
                    .next()
                    .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in value.split(',').map(str::trim) {
                    if token.eq_ignore_ascii_case("close") {
                        close = true;
                    } else if token.eq_ignore_ascii_case("keep-alive") {
                        close = false;
                    }
                }
            }
        }
        self.status = status;
        // RFC 9112 §6.3: no body after HEAD, 1xx, 204 and 304; then
        // chunked wins over a length; without either the body runs to the
        // end of the connection.
        self.framing = if status < 200 {
            Framing::Head
        } else if head_request || status == 204 || status == 304 {
            Framing::Length(0)
        } else if chunked {
            Framing::ChunkSize
        } else if let Some(n) = length {
            Framing::Length(n)
        } else {
            close = true;
            Framing::UntilClose
        };
        self.close = close;
        Ok(Some(n))
    }

    fn body(&mut self, chunk: &[u8], check: &mut Option<BodyCheck>) {
        if self.checking {
            if let Some(c) = check.as_mut() {
                c.feed(chunk);
            }
        }
    }

    /// The answer of the response just read; ready for the next one.
    fn finish(&mut self, check: &mut Option<BodyCheck>) -> Answer {
        let body = if self.checking {
            check.take().map(|c| c.finish())
        } else {
            None
        };
        let answer = Answer {
            status: self.status,
            bytes: self.bytes,
            close: self.close,
            body,
        };
        *self = ResponseReader::new();
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fileset::{content_key, fill};

    /// Feed `wire` to a reader in pieces of `split` bytes, as a connection
    /// would (keeping what a step did not consume), and collect answers.
    fn read_all(wire: &[u8], split: usize, mut check: Option<BodyCheck>) -> Vec<Answer> {
        let mut reader = ResponseReader::new();
        let mut pending = Vec::new();
        let mut answers = Vec::new();
        for piece in wire.chunks(split.max(1)) {
            pending.extend_from_slice(piece);
            loop {
                let (used, step) = reader.step(&pending, false, &mut check).unwrap();
                pending.drain(..used);
                match step {
                    Step::Done(a) => answers.push(a),
                    Step::More => break,
                }
            }
        }
        if let Some(a) = reader.at_end(&mut check) {
            answers.push(a);
        }
        answers
    }

    fn file_body(path: &str, size: usize) -> Vec<u8> {
        let mut body = vec![0; size];
        fill(content_key(path), 0, &mut body);
        body
    }

    #[test]
    fn heads_and_bodies_are_read_however_the_bytes_are_split() {
        let path = "/dir00000/class1_0";
        let body = file_body(path, 1024);
        let mut wire = b"HTTP/1.1 200 OK\r\nContent-Length: 1024\r\n\r\n".to_vec();
        wire.extend_from_slice(&body);
        // A pipelined 404 right behind it.
        wire.extend_from_slice(b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!");
        for split in [1, 7, 100, wire.len()] {
            let answers = read_all(&wire, split, Some(BodyCheck::new(path, 1024)));
            assert_eq!(answers.len(), 2, "split {split}");
            assert_eq!(answers[0].status, 200);
            assert_eq!(answers[0].body, Some(Ok(())));
            assert_eq!(answers[0].bytes, 41 + 1024);
            assert!(!answers[0].close);
            assert_eq!(answers[1].status, 404);
            assert_eq!(answers[1].body, None);
        }
    }

    #[test]
    fn a_wrong_byte_and_a_short_body_fail_the_check() {
        let path = "/dir00000/class0_1";
        let mut body = file_body(path, 204);
        body[10] ^= 1;
        let mut wire = b"HTTP/1.1 200 OK\r\nContent-Length: 204\r\n\r\n".to_vec();
        wire.extend_from_slice(&body);
        let a = read_all(&wire, 50, Some(BodyCheck::new(path, 204)));
        assert_eq!(a[0].body, Some(Err(BodyMismatch::Byte { offset: 10 })));
        // The server says 100 bytes where the file has 204.
        let mut wire = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".to_vec();
        wire.extend_from_slice(&file_body(path, 100));
        let a = read_all(&wire, 50, Some(BodyCheck::new(path, 204)));
        assert_eq!(
            a[0].body,
            Some(Err(BodyMismatch::Length {
                got: 100,
                want: 204
            }))
        );
    }

    #[test]
    fn chunked_and_until_close_bodies_are_framed() {
        let path = "/dir00000/class0_0";
        let body = file_body(path, 102);
        let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        wire.extend_from_slice(b"2a\r\n");
        wire.extend_from_slice(&body[..42]);
        wire.extend_from_slice(b"\r\n3c;ext=1\r\n");
        wire.extend_from_slice(&body[42..]);
        wire.extend_from_slice(b"\r\n0\r\nX-Trailer: 1\r\n\r\n");
        for split in [1, 5, wire.len()] {
            let a = read_all(&wire, split, Some(BodyCheck::new(path, 102)));
            assert_eq!(a.len(), 1);
            assert_eq!(a[0].body, Some(Ok(())), "split {split}");
            assert_eq!(a[0].bytes, wire.len() as u64);
        }
        let mut wire = b"HTTP/1.0 200 OK\r\n\r\n".to_vec();
        wire.extend_from_slice(&body);
        let a = read_all(&wire, 30, Some(BodyCheck::new(path, 102)));
        assert_eq!(a.len(), 1);
        assert!(a[0].close);
        assert_eq!(a[0].body, Some(Ok(())));
    }

    #[test]
    fn head_304_and_interim_responses_have_no_body() {
        let mut reader = ResponseReader::new();
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n";
        let (used, step) = reader.step(wire, true, &mut None).unwrap();
        assert_eq!(used, wire.len());
        assert!(matches!(step, Step::Done(Answer { status: 200, .. })));
        let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\nConnection: close\r\n\r\n";
        let a = read_all(wire, 3, None);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].status, 304);
        assert!(a[0].close);
    }

    #[test]
    fn garbage_is_malformed_and_a_cut_response_is_lost() {
        let mut reader = ResponseReader::new();
        assert_eq!(
            reader.step(b"SSH-2.0-OpenSSH\r\n\r\n", false, &mut None),
            Err(Malformed)
        );
        let mut reader = ResponseReader::new();
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n";
        assert_eq!(reader.step(wire, false, &mut None), Err(Malformed));
        let mut reader = ResponseReader::new();
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
        let (_, step) = reader.step(wire, false, &mut None).unwrap();
        assert_eq!(step, Step::More);
        assert_eq!(reader.at_end(&mut None), None);
        let huge = vec![b'a'; MAX_HEAD_BYTES + 1];
        assert_eq!(
            ResponseReader::new().step(&huge, false, &mut None),
            Err(Malformed)
        );
    }
}
