//! IRC messages as RFC 2812 §2.3 writes them: `[:prefix SPACE] command
//! *14(SPACE middle) [SPACE :trailing] CRLF`, at most 512 bytes with the
//! CRLF; and the names (nicknames, channels) and the case mapping the chat
//! server uses.
//!
//! Hand-written rather than `irc-proto`: that crate parses each line into
//! owned `String`s and a `Command` enum (an allocation per parameter), and
//! the server's hot path only needs to find the command and its target and
//! hand on the text's bytes unchanged, which slices of the line do with no
//! allocation. The grammar is small and tested below against RFC 2812's
//! own examples.

/// The longest line, CRLF included (RFC 2812 §2.3).
pub const MAX_LINE: usize = 512;
/// The most parameters a message has (RFC 2812 §2.3.1: 14 middles and a
/// trailing).
pub const MAX_PARAMS: usize = 15;
/// The longest nickname accepted (RFC 2812 says 9; most servers allow
/// more and announce it with `NICKLEN` in 005).
pub const NICKLEN: usize = 30;
/// The longest channel name (RFC 2812 §1.3).
pub const CHANNELLEN: usize = 50;

/// One parsed line: slices of the bytes it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<'a> {
    pub prefix: Option<&'a [u8]>,
    pub command: &'a [u8],
    params: [&'a [u8]; MAX_PARAMS],
    len: usize,
}

impl<'a> Message<'a> {
    pub fn params(&self) -> &[&'a [u8]] {
        &self.params[..self.len]
    }

    pub fn param(&self, i: usize) -> Option<&'a [u8]> {
        self.params().get(i).copied()
    }

    /// The command, upper-cased when it is a word (commands are case
    /// insensitive).
    pub fn command_upper(&self) -> Vec<u8> {
        self.command.to_ascii_uppercase()
    }

    /// The last parameter (a reply's text).
    pub fn last(&self) -> Option<&'a [u8]> {
        self.params().last().copied()
    }

    /// The numeric reply's code (`001`, `366`, `433`), if it is one.
    pub fn numeric(&self) -> Option<u16> {
        if self.command.len() != 3 || !self.command.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(
            self.command
                .iter()
                .fold(0u16, |acc, &d| acc * 10 + u16::from(d - b'0')),
        )
    }

    /// `code text` of a numeric error reply, for a reason: `433 Nickname
    /// already in use`.
    pub fn reason(&self) -> String {
        let text = self.last().map(String::from_utf8_lossy).unwrap_or_default();
        format!("{} {}", String::from_utf8_lossy(self.command), text.trim())
    }
}

/// Parses one line (without its CR LF). `None` for a line with no command
/// (empty, only spaces, or only a prefix): RFC 2812 §2.3.1 says such a
/// message is silently ignored.
pub fn parse(line: &[u8]) -> Option<Message<'_>> {
    let mut rest = trim_spaces(line);
    let mut prefix = None;
    if let Some(p) = rest.strip_prefix(b":") {
        let (word, after) = split_word(p);
        prefix = Some(word);
        rest = trim_spaces(after);
    }
    let (command, mut rest) = split_word(rest);
    if command.is_empty() {
        return None;
    }
    let mut params: [&[u8]; MAX_PARAMS] = [&[]; MAX_PARAMS];
    let mut len = 0;
    loop {
        rest = trim_spaces(rest);
        if rest.is_empty() {
            break;
        }
        // The last slot takes the rest, colon or not (RFC 2812: the 15th
        // parameter may contain spaces without a colon).
        if let Some(trailing) = rest.strip_prefix(b":") {
            params[len] = trailing;
            len += 1;
            break;
        }
        if len == MAX_PARAMS - 1 {
            params[len] = rest;
            len += 1;
            break;
        }
        let (word, after) = split_word(rest);
        params[len] = word;
        len += 1;
        rest = after;
    }
    Some(Message {
        prefix,
        command,
        params,
        len,
    })
}

fn trim_spaces(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|&&c| c == b' ').count();
    &b[n..]
}

fn split_word(b: &[u8]) -> (&[u8], &[u8]) {
    match b.iter().position(|&c| c == b' ') {
        Some(i) => (&b[..i], &b[i..]),
        None => (b, &[]),
    }
}

/// RFC 2812 §2.3.1: `nickname = ( letter / special ) *8( letter / digit /
/// special / "-" )`, here up to [`NICKLEN`].
pub fn valid_nick(n: &[u8]) -> bool {
    let special = |c: u8| {
        matches!(
            c,
            b'[' | b']' | b'\\' | b'`' | b'_' | b'^' | b'{' | b'|' | b'}'
        )
    };
    match n.split_first() {
        Some((&first, rest)) if n.len() <= NICKLEN => {
            (first.is_ascii_alphabetic() || special(first))
                && rest
                    .iter()
                    .all(|&c| c.is_ascii_alphanumeric() || special(c) || c == b'-')
        }
        _ => false,
    }
}

/// RFC 2812 §1.3 and §2.3.1: a channel starts with `#` or `&` and holds no
/// NUL, BELL, CR, LF, space, comma or colon, at most [`CHANNELLEN`] bytes.
/// And UTF-8 here (RFC 2812 allows any other octet; ngircd keeps them): the
/// server names channels as text, and a name it could not echo unchanged
/// is refused rather than shown altered.
pub fn valid_channel(c: &[u8]) -> bool {
    (2..=CHANNELLEN).contains(&c.len())
        && matches!(c[0], b'#' | b'&')
        && c[1..]
            .iter()
            .all(|&b| !matches!(b, 0 | 7 | b'\r' | b'\n' | b' ' | b',' | b':'))
        && std::str::from_utf8(c).is_ok()
}

/// Whether a target names a channel (else a nickname).
pub fn is_channel(target: &[u8]) -> bool {
    matches!(target.first(), Some(b'#' | b'&'))
}

/// The `rfc1459` case mapping (RFC 2812 §2.2): `{}|^` are the lower case
/// of `[]\~`; two names are the same when their folds are equal.
pub fn fold(name: &[u8]) -> Vec<u8> {
    name.iter()
        .map(|&c| match c {
            b'A'..=b'Z' => c + 32,
            b'[' => b'{',
            b']' => b'}',
            b'\\' => b'|',
            b'~' => b'^',
            _ => c,
        })
        .collect()
}

/// Splits whatever bytes arrived into lines: CR LF, a bare LF or a bare CR
/// ends one (RFC 2812 §2.3 says CR LF; like ngircd, smtlab takes either
/// alone too, as some clients send them, and skips the empty line between
/// the two halves of a CR LF). A line longer than [`MAX_LINE`] is dropped
/// whole, up to its end, and reported once.
#[derive(Debug, Default)]
pub struct Lines {
    /// The part of a line not yet ended (empty while idle: no memory held).
    partial: Vec<u8>,
    /// Inside an overlong line: drop bytes up to the next line end.
    discarding: bool,
}

/// One item of input.
#[derive(Debug, PartialEq, Eq)]
pub enum Input<'a> {
    Line(&'a [u8]),
    /// A line longer than [`MAX_LINE`] was dropped (answer 417).
    TooLong,
}

fn is_line_end(c: u8) -> bool {
    c == b'\n' || c == b'\r'
}

impl Lines {
    /// Feeds `data`, calling `each` for every line it ends, until `each`
    /// returns false (the connection must stop reading for now, or is
    /// done). Returns the bytes of `data` taken: all of them, or those up
    /// to the end of the line at which `each` said stop — the caller feeds
    /// the rest again later (or drops it when the connection is done).
    pub fn feed(&mut self, data: &[u8], mut each: impl FnMut(Input<'_>) -> bool) -> usize {
        let mut at = 0;
        while at < data.len() {
            let rest = &data[at..];
            let Some(end) = rest.iter().position(|&c| is_line_end(c)) else {
                if !self.discarding {
                    if self.partial.len() + rest.len() > MAX_LINE {
                        self.partial = Vec::new();
                        self.discarding = true;
                        each(Input::TooLong);
                    } else {
                        self.partial.extend_from_slice(rest);
                    }
                }
                return data.len();
            };
            let head = &rest[..end];
            // A CR LF is one end (when its LF came in another read, the
            // empty line it leaves is skipped below).
            let crlf = rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n');
            at += end + 1 + usize::from(crlf);
            if self.discarding {
                self.discarding = false;
                continue;
            }
            let keep_going = if self.partial.is_empty() {
                Self::one(head, &mut each)
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(head);
                Self::one(&whole, &mut each)
            };
            if !keep_going {
                return at;
            }
        }
        data.len()
    }

    fn one(line: &[u8], each: &mut impl FnMut(Input<'_>) -> bool) -> bool {
        if line.is_empty() {
            // An empty line, or the LF of a CR LF: nothing (RFC 2812
            // §2.3.1 ignores empty messages).
            true
        } else if line.len() + 2 > MAX_LINE {
            each(Input::TooLong)
        } else {
            each(Input::Line(line))
        }
    }

    /// Bytes held for a line not yet ended.
    pub fn held(&self) -> usize {
        self.partial.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(m: &Message<'_>) -> (Option<String>, String, Vec<String>) {
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (
            m.prefix.map(s),
            s(m.command),
            m.params().iter().map(|p| s(p)).collect(),
        )
    }

    #[test]
    fn rfc_2812_examples_parse() {
        let m = parse(b":WiZ!jto@tolsun.oulu.fi NICK Kilroy").unwrap();
        assert_eq!(
            owned(&m),
            (
                Some("WiZ!jto@tolsun.oulu.fi".into()),
                "NICK".into(),
                vec!["Kilroy".into()]
            )
        );
        let m = parse(b"USER guest 0 * :Ronnie Reagan").unwrap();
        assert_eq!(owned(&m).2, vec!["guest", "0", "*", "Ronnie Reagan"]);
        let m = parse(b"PRIVMSG #chan :hello  world: yes").unwrap();
        assert_eq!(owned(&m).2, vec!["#chan", "hello  world: yes"]);
        let m = parse(b"JOIN #foo,#bar fubar,foobar").unwrap();
        assert_eq!(owned(&m).2, vec!["#foo,#bar", "fubar,foobar"]);
        // An empty trailing parameter is a parameter.
        assert_eq!(parse(b"PRIVMSG #a :").unwrap().params().len(), 2);
    }

    #[test]
    fn lines_without_a_command_are_ignored() {
        assert!(parse(b"").is_none());
        assert!(parse(b"    ").is_none());
        assert!(parse(b":prefix.only").is_none());
        assert!(parse(b":prefix   ").is_none());
    }

    #[test]
    fn the_fifteenth_parameter_takes_the_rest() {
        let line = b"CMD 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16";
        let m = parse(line).unwrap();
        assert_eq!(m.params().len(), 15);
        assert_eq!(m.param(14).unwrap(), b"15 16");
    }

    #[test]
    fn names() {
        assert!(valid_nick(b"Wiz"));
        assert!(valid_nick(b"[a]-9_"));
        assert!(!valid_nick(b"9lives"));
        assert!(!valid_nick(b"-x"));
        assert!(!valid_nick(b""));
        assert!(!valid_nick(b"a b"));
        assert!(!valid_nick(&[b'a'; NICKLEN + 1]));
        assert!(valid_channel(b"#smtlab"));
        assert!(valid_channel(b"&local"));
        assert!(!valid_channel(b"#"));
        assert!(!valid_channel(b"chan"));
        assert!(!valid_channel(b"#a,b"));
        assert!(!valid_channel(b"#a b"));
        assert!(valid_channel("#café".as_bytes()));
        assert!(!valid_channel(b"#caf\xe9"));
        assert_eq!(fold(b"Wiz[x]\\~"), b"wiz{x}|^".to_vec());
        assert_eq!(fold(b"#Chan"), fold(b"#cHAN"));
    }

    fn collect(lines: &mut Lines, data: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        lines.feed(data, |i| {
            out.push(match i {
                Input::Line(l) => String::from_utf8_lossy(l).into_owned(),
                Input::TooLong => "<too long>".into(),
            });
            true
        });
        out
    }

    #[test]
    fn lines_split_across_reads_and_crlf_or_lf() {
        let mut l = Lines::default();
        assert_eq!(
            collect(&mut l, b"NICK a\r\nUSER a 0 * :x\r\nPRIV"),
            vec!["NICK a", "USER a 0 * :x"]
        );
        assert!(l.held() > 0);
        assert_eq!(
            collect(&mut l, b"MSG #c :hi\nPING x\r\n"),
            vec!["PRIVMSG #c :hi", "PING x"]
        );
    }

    #[test]
    fn a_lone_cr_ends_a_line_and_crlf_split_across_reads_is_one_end() {
        let mut l = Lines::default();
        assert_eq!(
            collect(&mut l, b"PING a\rPING b\r"),
            vec!["PING a", "PING b"]
        );
        assert_eq!(collect(&mut l, b"PING c\r"), vec!["PING c"]);
        assert_eq!(collect(&mut l, b"\nPING d\r\n\r\n\n"), vec!["PING d"]);
        assert_eq!(l.held(), 0);
    }

    #[test]
    fn feeding_stops_after_the_line_that_said_stop_and_resumes_with_the_rest() {
        let mut l = Lines::default();
        let data = b"A 1\r\nB 2\r\nC 3\r\nD";
        let mut seen = Vec::new();
        let taken = l.feed(data, |i| {
            if let Input::Line(line) = i {
                seen.push(String::from_utf8_lossy(line).into_owned());
            }
            seen.len() < 2
        });
        assert_eq!(seen, vec!["A 1", "B 2"]);
        assert_eq!(&data[taken..], b"C 3\r\nD");
        assert_eq!(collect(&mut l, &data[taken..]), vec!["C 3"]);
        assert_eq!(collect(&mut l, b" 4\n"), vec!["D 4"]);
    }

    #[test]
    fn an_overlong_line_is_dropped_whole_and_reported_once() {
        let mut l = Lines::default();
        let long = vec![b'x'; 2000];
        let mut out = collect(&mut l, &long);
        out.extend(collect(&mut l, &long));
        out.extend(collect(&mut l, b"yyy\r\nPING ok\r\n"));
        assert_eq!(out, vec!["<too long>", "PING ok"]);
        // 510 bytes and CRLF is the longest line allowed; one more is not.
        let mut fits = vec![b'a'; MAX_LINE - 2];
        fits.extend_from_slice(b"\r\n");
        assert_eq!(collect(&mut l, &fits).len(), 1);
        assert_ne!(collect(&mut l, &fits)[0], "<too long>");
        let mut over = vec![b'a'; MAX_LINE - 1];
        over.extend_from_slice(b"\r\n");
        assert_eq!(collect(&mut l, &over), vec!["<too long>"]);
    }
}
