//! One connection's side of the IRC conversation, the same in every model:
//! registration (NICK, USER, the welcome), JOIN, PART, PRIVMSG and NOTICE
//! to channels and users, NAMES, WHO, MODE (read only), PING/PONG, QUIT,
//! and the error numerics of RFC 2812 §5.2. A session reads lines and
//! answers through outboxes; it never touches a socket.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::hub::{note_full, Channel, Client, Hub, Line, UserInfo};
use super::irc::{self, Input, Message};

/// What the connection does after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// The line filled some queue past its high-water mark (a recipient's,
    /// or this connection's own with its replies): read nothing more from
    /// this connection until [`Session::take_full`]'s connections have
    /// room (back-pressure; see `hub.rs`).
    Wait,
    /// QUIT was received: the answer is queued; close after sending it.
    Quit,
}

/// A connection's session.
pub struct Session {
    pub client: Arc<Client>,
    user: Option<(String, String)>,
    registered: bool,
    /// `nick!user@host`, made at registration and on NICK.
    prefix: String,
    channels: Vec<Arc<Channel>>,
    /// Set by QUIT: the reason the others are told.
    quit: Option<String>,
    /// Connections whose queue this one's last line filled past the
    /// high-water mark (itself included, by its replies).
    full: Vec<Arc<Client>>,
}

impl Session {
    pub fn new(client: Arc<Client>) -> Session {
        Session {
            client,
            user: None,
            registered: false,
            prefix: String::new(),
            channels: Vec::new(),
            quit: None,
            full: Vec::new(),
        }
    }

    /// Handles one item of input.
    pub fn input(&mut self, hub: &Hub, input: Input<'_>) -> Flow {
        let flow = match input {
            Input::Line(line) => self.line(hub, line),
            Input::TooLong => {
                self.numeric(hub, "417", &[], "Input line was too long");
                Flow::Continue
            }
        };
        if flow == Flow::Continue && !self.full.is_empty() {
            Flow::Wait
        } else {
            flow
        }
    }

    /// The connections to wait for after [`Flow::Wait`] (this one's own
    /// client among them when its own output is full).
    pub fn take_full(&mut self) -> Vec<Arc<Client>> {
        std::mem::take(&mut self.full)
    }

    fn line(&mut self, hub: &Hub, line: &[u8]) -> Flow {
        // RFC 2812 §2.3.1: no NUL anywhere in a message. The line is
        // dropped unanswered, as ngircd does (26.1 stops at the NUL and
        // never handles the line, measured; it also never handles the
        // lines after it, which smtlab does): there is no numeric for it,
        // and relaying it would hand the NUL to every client.
        if line.contains(&0) {
            return Flow::Continue;
        }
        let Some(msg) = irc::parse(line) else {
            return Flow::Continue;
        };
        let cmd = msg.command_upper();
        match cmd.as_slice() {
            b"NICK" => self.nick(hub, &msg),
            b"USER" => self.user(hub, &msg),
            b"PING" => match msg.param(0) {
                Some(token) => {
                    let name = hub.server_name.clone();
                    self.send_raw(
                        hub,
                        format!(":{name} PONG {name} :{}\r\n", lossy(token)).as_bytes(),
                    );
                }
                None => self.numeric(hub, "409", &[], "No origin specified"),
            },
            b"PONG" => {}
            b"QUIT" => {
                let why = msg.param(0).map(lossy).unwrap_or_default();
                self.quit = Some(if why.is_empty() {
                    "Client Quit".to_string()
                } else {
                    format!("Quit: {why}")
                });
                let host = self.client.host.clone();
                let reason = self.quit.clone().unwrap_or_default();
                self.send_raw(
                    hub,
                    format!("ERROR :Closing Link: {host} ({reason})\r\n").as_bytes(),
                );
                return Flow::Quit;
            }
            _ if !self.registered => {
                if KNOWN.contains(&cmd.as_slice()) {
                    self.numeric(hub, "451", &[], "You have not registered");
                } else {
                    self.numeric(hub, "421", &[&lossy(msg.command)], "Unknown command");
                }
            }
            b"JOIN" => self.join(hub, &msg),
            b"PART" => self.part(hub, &msg),
            b"PRIVMSG" => self.message(hub, &msg, "PRIVMSG"),
            b"NOTICE" => self.message(hub, &msg, "NOTICE"),
            b"NAMES" => match msg.param(0) {
                Some(list) => {
                    for name in list.split(|&c| c == b',') {
                        self.names(hub, name);
                    }
                }
                None => self.numeric(hub, "366", &["*"], "End of NAMES list"),
            },
            b"WHO" => self.who(hub, &msg),
            b"MODE" => self.mode(hub, &msg),
            _ => self.numeric(hub, "421", &[&lossy(msg.command)], "Unknown command"),
        }
        Flow::Continue
    }

    fn nick(&mut self, hub: &Hub, msg: &Message<'_>) {
        let Some(nick) = msg.param(0).filter(|n| !n.is_empty()) else {
            return self.numeric(hub, "431", &[], "No nickname given");
        };
        if !irc::valid_nick(nick) {
            return self.numeric(hub, "432", &[&lossy(nick)], "Erroneous nickname");
        }
        let nick = lossy(nick);
        let old = self.client.nick();
        if old == nick {
            return;
        }
        if !hub.claim_nick(&self.client, &nick) {
            return self.numeric(hub, "433", &[&nick], "Nickname is already in use");
        }
        if self.registered {
            // Everyone who shares a channel sees the change once, and so
            // does the client itself.
            let line: Line = format!(":{} NICK :{nick}\r\n", self.prefix)
                .into_bytes()
                .into();
            if self.client.out.reply(&line) {
                note_full(&mut self.full, &self.client);
            }
            self.tell_neighbours(&line);
            self.set_prefix();
        } else {
            self.try_register(hub);
        }
    }

    fn user(&mut self, hub: &Hub, msg: &Message<'_>) {
        if self.registered {
            return self.numeric(hub, "462", &[], "Unauthorized command (already registered)");
        }
        if msg.params().len() < 4 || msg.param(0).is_some_and(|u| u.is_empty()) {
            return self.numeric(hub, "461", &["USER"], "Not enough parameters");
        }
        let user: String = lossy(msg.params()[0])
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '@')
            .take(10)
            .collect();
        self.user = Some((user, lossy(msg.params()[3])));
        self.try_register(hub);
    }

    fn try_register(&mut self, hub: &Hub) {
        if self.registered || self.user.is_none() || self.client.nick().is_empty() {
            return;
        }
        self.registered = true;
        hub.counters.registered.fetch_add(1, Relaxed);
        if let Some((user, real_name)) = self.user.clone() {
            // Registration happens once per connection: the cell is empty.
            let _ = self.client.user.set(UserInfo { user, real_name });
        }
        self.set_prefix();
        let prefix = self.prefix.clone();
        let name = &hub.server_name;
        self.numeric(
            hub,
            "001",
            &[],
            &format!("Welcome to the Internet Relay Network {prefix}"),
        );
        self.numeric(
            hub,
            "002",
            &[],
            &format!(
                "Your host is {name}, running smtlab-chat {}",
                env!("CARGO_PKG_VERSION")
            ),
        );
        self.numeric(
            hub,
            "003",
            &[],
            &format!("This server was created {}", hub.created),
        );
        let version = format!("smtlab-chat-{}", env!("CARGO_PKG_VERSION"));
        self.numeric(hub, "004", &[name, &version, "o", "n"], "");
        let nicklen = format!("NICKLEN={}", irc::NICKLEN);
        let chanlen = format!("CHANNELLEN={}", irc::CHANNELLEN);
        let chanlimit = format!("CHANLIMIT=#&:{}", hub.max_channels);
        self.numeric(
            hub,
            "005",
            &[
                "CHANTYPES=#&",
                "CASEMAPPING=rfc1459",
                &nicklen,
                &chanlen,
                &chanlimit,
                "PREFIX=()",
            ],
            "are supported by this server",
        );
        self.numeric(hub, "422", &[], "MOTD File is missing");
    }

    fn set_prefix(&mut self) {
        let user = self.user.as_ref().map_or("", |u| u.0.as_str());
        self.prefix = format!("{}!{}@{}", self.client.nick(), user, self.client.host);
    }

    fn join(&mut self, hub: &Hub, msg: &Message<'_>) {
        let Some(list) = msg.param(0) else {
            return self.numeric(hub, "461", &["JOIN"], "Not enough parameters");
        };
        if list == b"0" {
            for channel in std::mem::take(&mut self.channels) {
                self.leave(hub, &channel, "");
            }
            return;
        }
        for name in list.split(|&c| c == b',') {
            if !irc::valid_channel(name) {
                self.numeric(hub, "403", &[&lossy(name)], "No such channel");
                continue;
            }
            let key = irc::fold(name);
            if self
                .channels
                .iter()
                .any(|c| irc::fold(c.name.as_bytes()) == key)
            {
                continue;
            }
            if self.channels.len() >= hub.max_channels {
                self.numeric(
                    hub,
                    "405",
                    &[&lossy(name)],
                    "You have joined too many channels",
                );
                continue;
            }
            let Some(channel) = hub.join(name, &self.client) else {
                continue;
            };
            let line: Line = format!(":{} JOIN {}\r\n", self.prefix, channel.name)
                .into_bytes()
                .into();
            hub.broadcast(&channel, &line, &self.client, true, None, &mut self.full);
            self.channels.push(channel.clone());
            self.names(hub, channel.name.as_bytes());
        }
    }

    fn part(&mut self, hub: &Hub, msg: &Message<'_>) {
        let Some(list) = msg.param(0) else {
            return self.numeric(hub, "461", &["PART"], "Not enough parameters");
        };
        let why = msg.param(1).map(lossy).unwrap_or_default();
        for name in list.split(|&c| c == b',') {
            let key = irc::fold(name);
            match self
                .channels
                .iter()
                .position(|c| irc::fold(c.name.as_bytes()) == key)
            {
                Some(i) => {
                    let channel = self.channels.swap_remove(i);
                    self.leave(hub, &channel, &why);
                }
                None if hub.find_channel(name).is_some() => {
                    self.numeric(hub, "442", &[&lossy(name)], "You're not on that channel")
                }
                None => self.numeric(hub, "403", &[&lossy(name)], "No such channel"),
            }
        }
    }

    /// PART of one channel: told to its members (the client included).
    fn leave(&mut self, hub: &Hub, channel: &Arc<Channel>, why: &str) {
        let line: Line = if why.is_empty() {
            format!(":{} PART {}\r\n", self.prefix, channel.name)
        } else {
            format!(":{} PART {} :{why}\r\n", self.prefix, channel.name)
        }
        .into_bytes()
        .into();
        hub.broadcast(channel, &line, &self.client, true, None, &mut self.full);
        hub.part(channel, &self.client);
    }

    fn message(&mut self, hub: &Hub, msg: &Message<'_>, kind: &str) {
        // NOTICE never gets an automatic answer (RFC 2812 §3.3.2).
        let notice = kind == "NOTICE";
        let Some(targets) = msg.param(0).filter(|t| !t.is_empty()) else {
            if !notice {
                self.numeric(hub, "411", &[], &format!("No recipient given ({kind})"));
            }
            return;
        };
        let Some(text) = msg.param(1).filter(|t| !t.is_empty()) else {
            if !notice {
                self.numeric(hub, "412", &[], "No text to send");
            }
            return;
        };
        hub.counters.messages_in.fetch_add(1, Relaxed);
        for target in targets.split(|&c| c == b',') {
            let head = format!(":{} {kind} {} :", self.prefix, lossy(target));
            let mut bytes = Vec::with_capacity(head.len() + text.len() + 2);
            bytes.extend_from_slice(head.as_bytes());
            bytes.extend_from_slice(text);
            bytes.extend_from_slice(b"\r\n");
            let line: Line = bytes.into();
            if irc::is_channel(target) {
                let key = irc::fold(target);
                match self
                    .channels
                    .iter()
                    .find(|c| irc::fold(c.name.as_bytes()) == key)
                {
                    Some(channel) => {
                        hub.broadcast(
                            channel,
                            &line,
                            &self.client,
                            false,
                            Some(&hub.counters.deliveries),
                            &mut self.full,
                        );
                    }
                    None if notice => {}
                    None if hub.find_channel(target).is_some() => {
                        self.numeric(hub, "404", &[&lossy(target)], "Cannot send to channel")
                    }
                    None => self.numeric(hub, "403", &[&lossy(target)], "No such channel"),
                }
            } else {
                match hub.find_nick(target) {
                    Some(peer) => {
                        hub.counters.deliveries.fetch_add(1, Relaxed);
                        let filled = if peer.id == self.client.id {
                            peer.out.reply(&line)
                        } else {
                            peer.out.push(&line)
                        };
                        if filled {
                            note_full(&mut self.full, &peer);
                        }
                    }
                    None if notice => {}
                    None => self.numeric(hub, "401", &[&lossy(target)], "No such nick/channel"),
                }
            }
        }
    }

    /// 353 RPL_NAMREPLY lines (as many as 512 bytes allow) and 366.
    fn names(&mut self, hub: &Hub, name: &[u8]) {
        if let Some(channel) = hub.find_channel(name) {
            let nicks: Vec<String> = channel
                .members
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .map(|m| m.nick())
                .collect();
            let mut chunk = String::new();
            for n in nicks {
                if chunk.len() + n.len() + 1 > 400 {
                    self.numeric(hub, "353", &["=", &channel.name], &chunk);
                    chunk.clear();
                }
                if !chunk.is_empty() {
                    chunk.push(' ');
                }
                chunk.push_str(&n);
            }
            if !chunk.is_empty() {
                self.numeric(hub, "353", &["=", &channel.name], &chunk);
            }
        }
        self.numeric(hub, "366", &[&lossy(name)], "End of NAMES list");
    }

    /// WHO of a channel (its members) or of a nickname (exactly; no
    /// wildcards): each as `352 <channel> <user> <host> <server> <nick> H
    /// :0 <real name>` (RFC 2812 §3.6.1, §4.2.1), the user and host those
    /// of its prefix; the channel is `*` for a nickname.
    fn who(&mut self, hub: &Hub, msg: &Message<'_>) {
        let mask = msg.param(0).unwrap_or(b"*");
        let (channel, members) = if let Some(channel) = hub.find_channel(mask) {
            let members = channel
                .members
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            (channel.name.clone(), members)
        } else if irc::is_channel(mask) {
            (String::new(), Vec::new())
        } else {
            ("*".to_string(), hub.find_nick(mask).into_iter().collect())
        };
        let server = hub.server_name.clone();
        for m in members {
            // A nickname taken before USER is nobody's yet.
            let Some(user) = m.user.get() else { continue };
            let nick = m.nick();
            self.numeric(
                hub,
                "352",
                &[&channel, &user.user, &m.host, &server, &nick, "H"],
                &format!("0 {}", user.real_name),
            );
        }
        self.numeric(hub, "315", &[&lossy(mask)], "End of WHO list");
    }

    /// MODE is answered (read only: the channel mode is `+n`, no user
    /// modes); changes are refused with 482/501.
    fn mode(&mut self, hub: &Hub, msg: &Message<'_>) {
        let Some(target) = msg.param(0) else {
            return self.numeric(hub, "461", &["MODE"], "Not enough parameters");
        };
        if irc::is_channel(target) {
            match hub.find_channel(target) {
                None => self.numeric(hub, "403", &[&lossy(target)], "No such channel"),
                Some(c) if msg.param(1).is_none_or(|m| m == b"b") => {
                    if msg.param(1).is_some() {
                        self.numeric(hub, "368", &[&c.name], "End of channel ban list");
                    } else {
                        self.numeric(hub, "324", &[&c.name, "+n"], "");
                    }
                }
                Some(c) => self.numeric(hub, "482", &[&c.name], "You're not channel operator"),
            }
        } else if irc::fold(target) != irc::fold(self.client.nick().as_bytes()) {
            self.numeric(hub, "502", &[], "Cannot change mode for other users");
        } else if msg.param(1).is_some() {
            self.numeric(hub, "501", &[], "Unknown MODE flag");
        } else {
            self.numeric(hub, "221", &["+"], "");
        }
    }

    /// The connection ends (QUIT, closed by the client, or by the server
    /// with `reason`): the others who share a channel are told once, the
    /// nickname and the memberships are released.
    pub fn end(&mut self, hub: &Hub, reason: &str) {
        let reason = self.quit.take().unwrap_or_else(|| reason.to_string());
        // The nickname first: whoever reads the QUIT may take it at once
        // (a client reconnecting under its old name), and must not be told
        // it is still in use.
        hub.release_nick(&self.client);
        if self.registered && !self.channels.is_empty() {
            let line: Line = format!(":{} QUIT :{reason}\r\n", self.prefix)
                .into_bytes()
                .into();
            self.tell_neighbours(&line);
        }
        for channel in std::mem::take(&mut self.channels) {
            hub.part(&channel, &self.client);
        }
        if self.registered {
            self.registered = false;
            hub.counters.registered.fetch_sub(1, Relaxed);
        }
        // Nobody waits for others on behalf of a connection that ended.
        self.full.clear();
    }

    /// Hands `line` once to every other client that shares a channel.
    fn tell_neighbours(&mut self, line: &Line) {
        let mut told: Vec<u64> = vec![self.client.id];
        for channel in &self.channels {
            let members = channel.members.read().unwrap_or_else(|e| e.into_inner());
            for m in members.iter() {
                if !told.contains(&m.id) {
                    told.push(m.id);
                    if m.out.push(line) {
                        note_full(&mut self.full, m);
                    }
                }
            }
        }
    }

    /// `:server CODE nick params... :text`.
    fn numeric(&mut self, hub: &Hub, code: &str, params: &[&str], text: &str) {
        let nick = self.client.nick();
        let nick = if nick.is_empty() {
            "*".to_string()
        } else {
            nick
        };
        let mut s = format!(":{} {code} {nick}", hub.server_name);
        for p in params {
            s.push(' ');
            s.push_str(p);
        }
        if !text.is_empty() || params.is_empty() {
            s.push_str(" :");
            s.push_str(text);
        }
        s.push_str("\r\n");
        self.send_raw(hub, s.as_bytes());
    }

    fn send_raw(&mut self, _hub: &Hub, bytes: &[u8]) {
        let line: Line = bytes.into();
        if self.client.out.reply(&line) {
            note_full(&mut self.full, &self.client);
        }
    }
}

/// Commands this server knows (answered 451 before registration rather
/// than 421).
const KNOWN: [&[u8]; 8] = [
    b"JOIN", b"PART", b"PRIVMSG", b"NOTICE", b"NAMES", b"WHO", b"MODE", b"PONG",
];

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
