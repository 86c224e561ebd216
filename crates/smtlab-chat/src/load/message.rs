//! IRC lines as the load generator writes and reads them (RFC 2812,
//! section 2.3): the commands of a client's set-up (`NICK`, `USER`,
//! `JOIN`, `PONG`), and the `PRIVMSG` that carries a measured message.
//! What the server sends is split by the chat server's own RFC 2812
//! parser (`server::irc`), which allocates nothing (every delivery goes
//! through it).
//!
//! A measured message's text says who sent it, which of its sender's
//! messages it is and when its latency starts, in fixed-width hex, padded
//! with `x` to the configured length: the receiver checks the whole text
//! (a server that truncates or garbles it is caught), and the fixed width
//! makes every message of a run the same length on the wire.

use std::fmt::Write as _;

/// The header of a measured message's text: `sender seq time`, 8 + 1 + 8 +
/// 1 + 16 hex digits and spaces.
pub const HEADER_BYTES: usize = 34;

/// What a measured message's text carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The sender's index among all the run's clients.
    pub sender: u32,
    /// The sender's count of messages before this one.
    pub seq: u32,
    /// Nanoseconds from the run's epoch to the instant its latency runs
    /// from (closed loop: when it was sent; open loop: when it was meant to
    /// be sent).
    pub time_ns: u64,
}

/// A client's nickname: `prefix` and its index in base 36 (short: a
/// 9-character nickname, RFC 2812's limit, leaves 8 characters after a
/// one-letter prefix, 36^8 names).
pub fn nick(prefix: &str, index: usize) -> String {
    let mut digits = Vec::new();
    let mut n = index;
    loop {
        digits.push(char::from_digit((n % 36) as u32, 36).expect("a base-36 digit"));
        n /= 36;
        if n == 0 {
            break;
        }
    }
    let mut s = String::with_capacity(prefix.len() + digits.len());
    s.push_str(prefix);
    s.extend(digits.iter().rev());
    s
}

/// A room's channel name, `#{prefix}{room}`.
pub fn channel(prefix: &str, room: usize) -> String {
    format!("#{prefix}{room}")
}

/// Registration: `NICK` and `USER` (mode 0, the real name `smtlab`).
pub fn write_registration(out: &mut Vec<u8>, nick: &str) {
    let _ = write!(Bytes(out), "NICK {nick}\r\nUSER {nick} 0 * :smtlab\r\n");
}

pub fn write_join(out: &mut Vec<u8>, channel: &str) {
    let _ = write!(Bytes(out), "JOIN {channel}\r\n");
}

/// The answer to `PING :token`, echoing its token.
pub fn write_pong(out: &mut Vec<u8>, token: &[u8]) {
    out.extend_from_slice(b"PONG :");
    out.extend_from_slice(token);
    out.extend_from_slice(b"\r\n");
}

/// `PRIVMSG channel :text`, the text `text_bytes` long (at least
/// [`HEADER_BYTES`]).
pub fn write_privmsg(out: &mut Vec<u8>, channel: &str, header: Header, text_bytes: usize) {
    debug_assert!(text_bytes >= HEADER_BYTES);
    out.extend_from_slice(b"PRIVMSG ");
    out.extend_from_slice(channel.as_bytes());
    out.extend_from_slice(b" :");
    let _ = write!(
        Bytes(out),
        "{:08x} {:08x} {:016x}",
        header.sender,
        header.seq,
        header.time_ns
    );
    out.resize(out.len() + text_bytes - HEADER_BYTES, b'x');
    out.extend_from_slice(b"\r\n");
}

/// The header of a measured message's text, if the text is one of this
/// run's: `text_bytes` long, the header's digits in place, the padding
/// intact.
pub fn parse_text(text: &[u8], text_bytes: usize) -> Option<Header> {
    if text.len() != text_bytes || text.len() < HEADER_BYTES {
        return None;
    }
    if text[8] != b' ' || text[17] != b' ' {
        return None;
    }
    if !text[HEADER_BYTES..].iter().all(|&b| b == b'x') {
        return None;
    }
    Some(Header {
        sender: hex(&text[0..8])? as u32,
        seq: hex(&text[9..17])? as u32,
        time_ns: hex(&text[18..34])?,
    })
}

/// Lower-case hex digits (as written) to a number.
fn hex(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |acc, &d| {
        let v = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            _ => return None,
        };
        Some(acc << 4 | u64::from(v))
    })
}

/// Channel names compare without case (RFC 2812 section 2.2: the
/// Scandinavian `{}|^` are the lower case of `[]\~`).
pub fn same_name(a: &[u8], b: &[u8]) -> bool {
    let fold = |c: u8| match c {
        b'A'..=b'Z' => c + 32,
        b'[' => b'{',
        b']' => b'}',
        b'\\' => b'|',
        b'~' => b'^',
        _ => c,
    };
    a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| fold(x) == fold(y))
}

/// `fmt::Write` into a byte vector (the lines are ASCII).
struct Bytes<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Bytes<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::irc;

    #[test]
    fn nicks_are_short_base_36() {
        assert_eq!(nick("s", 0), "s0");
        assert_eq!(nick("s", 35), "sz");
        assert_eq!(nick("s", 36), "s10");
        assert_eq!(nick("ab", 99_999), "ab255r");
        assert_eq!(channel("room", 7), "#room7");
    }

    #[test]
    fn a_message_text_goes_there_and_back() {
        let h = Header {
            sender: 9_999,
            seq: 123_456_789,
            time_ns: 0x0123_4567_89ab_cdef,
        };
        let mut out = Vec::new();
        write_privmsg(&mut out, "#c1", h, 64);
        let line = std::str::from_utf8(&out).unwrap();
        assert!(line.starts_with("PRIVMSG #c1 :0000270f 075bcd15 0123456789abcdef"));
        assert!(line.ends_with("xx\r\n"));
        assert_eq!(out.len(), "PRIVMSG #c1 :".len() + 64 + 2);
        let parsed = irc::parse(&out[..out.len() - 2]).unwrap();
        assert_eq!(parsed.command, b"PRIVMSG");
        assert_eq!(parsed.param(0), Some(&b"#c1"[..]));
        assert_eq!(parse_text(parsed.last().unwrap(), 64), Some(h));
        // Shortest text: the header alone.
        out.clear();
        write_privmsg(&mut out, "#c", h, HEADER_BYTES);
        let parsed = irc::parse(&out[..out.len() - 2]).unwrap();
        assert_eq!(parse_text(parsed.last().unwrap(), HEADER_BYTES), Some(h));
    }

    #[test]
    fn a_damaged_text_is_refused() {
        let h = Header {
            sender: 1,
            seq: 2,
            time_ns: 3,
        };
        let mut out = Vec::new();
        write_privmsg(&mut out, "#c", h, 50);
        let text = &out["PRIVMSG #c :".len()..out.len() - 2];
        assert!(parse_text(text, 50).is_some());
        assert!(parse_text(&text[..49], 50).is_none(), "truncated");
        assert!(parse_text(text, 51).is_none(), "another length");
        let mut bad = text.to_vec();
        bad[45] = b'y';
        assert!(parse_text(&bad, 50).is_none(), "padding");
        let mut bad = text.to_vec();
        bad[3] = b'G';
        assert!(parse_text(&bad, 50).is_none(), "digit");
        assert!(parse_text(b"hello", 5).is_none());
    }

    #[test]
    fn server_lines_split_into_prefix_command_and_params() {
        let l = irc::parse(b":irc.test 433 * s1 :Nickname already in use").unwrap();
        assert_eq!(l.numeric(), Some(433));
        assert_eq!(l.param(0), Some(&b"*"[..]));
        assert_eq!(l.param(3), None);
        assert_eq!(l.reason(), "433 Nickname already in use");
        let l = irc::parse(b"PING :abc def").unwrap();
        assert_eq!(l.command, b"PING");
        assert_eq!(l.last(), Some(&b"abc def"[..]));
        let l = irc::parse(b":s1!~s1@127.0.0.1  PRIVMSG  #c0 :hi :there").unwrap();
        assert_eq!(l.command, b"PRIVMSG");
        assert_eq!(l.param(0), Some(&b"#c0"[..]));
        assert_eq!(l.param(1), Some(&b"hi :there"[..]));
        assert_eq!(l.numeric(), None);
        let l = irc::parse(b":srv 366 s1 #c0 :End of NAMES list").unwrap();
        assert_eq!(l.param(1), Some(&b"#c0"[..]));
        assert!(irc::parse(b"").is_none());
        assert!(irc::parse(b":prefixonly").is_none());
        let many = b"CMD 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16";
        let l = irc::parse(many).unwrap();
        assert_eq!(l.param(irc::MAX_PARAMS - 1), Some(&b"15 16"[..]));
        assert_eq!(l.param(irc::MAX_PARAMS), None);
        assert_eq!(l.last(), Some(&b"15 16"[..]));
        let mut out = Vec::new();
        write_registration(&mut out, "s1");
        write_join(&mut out, "#c0");
        write_pong(&mut out, b"tok");
        assert_eq!(
            out,
            b"NICK s1\r\nUSER s1 0 * :smtlab\r\nJOIN #c0\r\nPONG :tok\r\n".to_vec()
        );
    }

    #[test]
    fn channel_names_fold_case() {
        assert!(same_name(b"#Room[1]", b"#room{1}"));
        assert!(!same_name(b"#room1", b"#room2"));
        assert!(!same_name(b"#room1", b"#room10"));
    }
}
