//! A chat server point's parameters (`-w chat`, `-w ngircd`: `--param
//! K=V` and `--client-cpus`), parsed and checked once, when the run is
//! planned, into [`ChatParams`], which the sample then runs with as they
//! are.

use std::collections::BTreeMap;

use smtlab_serving::server_params::{self, ServerParamError};
use smtlab_types::{CpuSet, ServerKind, CLIENT_CPUS_PARAM};

use crate::load::MAX_CONNECTIONS;

/// The chat servers: smtlab's own and ngircd.
pub const CHAT_SERVERS: [ServerKind; 2] = [ServerKind::Chat, ServerKind::Ngircd];
/// The parameters a chat point takes (`--param K=V`).
pub const CHAT_PARAMS: [&str; 4] = ["connections", "room", "messages", "rate"];
/// Clients in all by default: VolanoMark's 10 rooms of 20.
pub const DEFAULT_CONNECTIONS: usize = 200;
pub const DEFAULT_ROOM: usize = 20;
/// Messages sent in all by default (each user sends its share, at least
/// one): about a second of work at 200 connections, and a sample that
/// stays short at 10,000.
pub const DEFAULT_TOTAL_MESSAGES: usize = 20_000;
/// The largest room (ngircd's limit of members per channel too).
const MAX_ROOM: usize = 1000;

/// How a chat point is measured, from its `--param`s and `--client-cpus`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatParams {
    pub connections: usize,
    pub room: usize,
    /// Per user; default [`DEFAULT_TOTAL_MESSAGES`] / connections.
    pub messages: usize,
    /// Open loop, messages/s in all.
    pub rate: Option<f64>,
    /// Where the load generator runs (`--client-cpus`); default: the CPUs
    /// the server does not use.
    pub client_cpus: Option<CpuSet>,
}

/// A chat point's parameter refused; each message names the parameter
/// (or the server) and says what would be valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChatParamError {
    #[error("--workload {server}: not a chat server")]
    NotAChatServer { server: ServerKind },
    #[error("--param rate={value}: expected messages per second, more than 0 and at most 1e9")]
    Rate { value: String },
    #[error(
        "--param connections={connections}: expected a multiple of room={room} (rooms of {room} \
         users)"
    )]
    RoomsUneven { connections: usize, room: usize },
    #[error("--param room={room}: at most 1000")]
    RoomTooLarge { room: usize },
    /// A count out of range, `client_cpus`, a parameter it does not take.
    #[error(transparent)]
    Server(#[from] ServerParamError),
}

impl ChatParams {
    /// Parse and check `server`'s parameters; `client_cpus`, the CPUs
    /// `--client-cpus` gave, wins over a `client_cpus` parameter.
    pub fn parse(
        server: ServerKind,
        params: &BTreeMap<String, String>,
        client_cpus: Option<&CpuSet>,
    ) -> Result<ChatParams, ChatParamError> {
        if !CHAT_SERVERS.contains(&server) {
            return Err(ChatParamError::NotAChatServer { server });
        }
        let mut connections = DEFAULT_CONNECTIONS;
        let mut room = DEFAULT_ROOM;
        let mut messages = None;
        let mut rate = None;
        let mut given_cpus = None;
        for (k, v) in params {
            match k.as_str() {
                "connections" => connections = server_params::count(k, v, 2, MAX_CONNECTIONS)?,
                "room" => room = server_params::count(k, v, 2, MAX_ROOM)?,
                "messages" => messages = Some(server_params::count(k, v, 1, 1_000_000_000)?),
                "rate" => match v.parse::<f64>() {
                    Ok(r) if r.is_finite() && r > 0.0 && r <= 1e9 => rate = Some(r),
                    _ => return Err(ChatParamError::Rate { value: v.clone() }),
                },
                CLIENT_CPUS_PARAM => given_cpus = Some(server_params::client_cpus(v)?),
                _ => {
                    return Err(ServerParamError::Unknown {
                        server,
                        param: k.clone(),
                        takes: CHAT_PARAMS.to_vec(),
                    }
                    .into())
                }
            }
        }
        if connections % room != 0 {
            return Err(ChatParamError::RoomsUneven { connections, room });
        }
        if server == ServerKind::Ngircd && room > MAX_ROOM {
            return Err(ChatParamError::RoomTooLarge { room });
        }
        let messages = messages.unwrap_or((DEFAULT_TOTAL_MESSAGES / connections).max(1));
        Ok(ChatParams {
            connections,
            room,
            messages,
            rate,
            client_cpus: client_cpus.cloned().or(given_cpus),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parameters_are_checked_with_the_name_at_fault() {
        let p = ChatParams::parse(ServerKind::Chat, &kv(&[]), None).unwrap();
        assert_eq!((p.connections, p.room, p.messages), (200, 20, 100));
        let p =
            ChatParams::parse(ServerKind::Ngircd, &kv(&[("connections", "10000")]), None).unwrap();
        assert_eq!(p.messages, 2);
        let p = ChatParams::parse(
            ServerKind::Chat,
            &kv(&[
                ("connections", "40"),
                ("room", "4"),
                ("messages", "7"),
                ("rate", "500"),
            ]),
            None,
        )
        .unwrap();
        assert_eq!(
            (p.connections, p.room, p.messages, p.rate),
            (40, 4, 7, Some(500.0))
        );
        for (pair, flag) in [
            (("connections", "1"), "--param connections=1"),
            (
                ("connections", "30"),
                "--param connections=30: expected a multiple",
            ),
            (("room", "x"), "--param room=x"),
            (("messages", "0"), "--param messages=0"),
            (("rate", "nan"), "--param rate=nan"),
            (("files", "5MB"), "--param files"),
            (("client_cpus", "x"), "--client-cpus x"),
        ] {
            let e = ChatParams::parse(ServerKind::Chat, &kv(&[pair]), None)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(flag), "{e}");
        }
    }

    /// `--client-cpus` arrives as the set it was checked to be, and is
    /// the one the load generator gets.
    #[test]
    fn the_client_cpus_given_are_the_set_the_load_generator_gets() {
        let given = CpuSet::parse_list("1,3").unwrap();
        let p = ChatParams::parse(ServerKind::Chat, &kv(&[("client_cpus", "2")]), Some(&given))
            .unwrap();
        assert_eq!(p.client_cpus, Some(given));
    }

    /// The CLI prints these as usage errors (exit 2), and tests of the
    /// CLI match them: each one, word for word.
    #[test]
    fn chat_param_messages_name_the_parameter_and_what_is_valid() {
        let chat = |pairs: &[(&str, &str)]| {
            ChatParams::parse(ServerKind::Chat, &kv(pairs), None)
                .unwrap_err()
                .to_string()
        };
        let cases = [
            (
                ChatParams::parse(ServerKind::Web, &kv(&[]), None)
                    .unwrap_err()
                    .to_string(),
                "--workload web: not a chat server",
            ),
            (chat(&[("room", "1")]), "--param room=1: expected 2 to 1000"),
            (
                chat(&[("rate", "nan")]),
                "--param rate=nan: expected messages per second, more than 0 and at most 1e9",
            ),
            (
                chat(&[("files", "5MB")]),
                "--param files: `chat` has no such parameter; it takes connections, room, \
                 messages, rate",
            ),
            (
                chat(&[("connections", "30")]),
                "--param connections=30: expected a multiple of room=20 (rooms of 20 users)",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e, want);
        }
    }
}
