//! Which server a [`Program::Server`](crate::Program::Server) point runs
//! (`-w web`, `nginx`, `chat`, `ngircd`): the closed list, named once, so
//! that no stage after the command line compares a server's name as text.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The key under which a server's load generator CPUs (`--client-cpus`)
/// are stored among its parameters (`"client_cpus": "2-3"`).
pub const CLIENT_CPUS_PARAM: &str = "client_cpus";

/// A server smtlab measures with its own load generator. Stored as its
/// name (`"web"`, ...), exactly as the `String` it replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    /// smtlab's static web server, in the point's model.
    Web,
    /// Debian's nginx, the web reference (one architecture: `event`).
    Nginx,
    /// smtlab's IRC chat server, in the point's model.
    Chat,
    /// Debian's ngircd, the chat reference (one architecture: `event`).
    Ngircd,
}

impl ServerKind {
    /// Every server, in the order `-w` lists them.
    pub const ALL: [ServerKind; 4] = [
        ServerKind::Web,
        ServerKind::Nginx,
        ServerKind::Chat,
        ServerKind::Ngircd,
    ];

    /// The name `-w` takes and the store keeps.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::Web => "web",
            ServerKind::Nginx => "nginx",
            ServerKind::Chat => "chat",
            ServerKind::Ngircd => "ngircd",
        }
    }

    /// The server `-w NAME` names, if it names one.
    pub fn from_name(name: &str) -> Option<ServerKind> {
        ServerKind::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether it is a chat (IRC) server, measured by the chat load
    /// generator; the others are web (HTTP) servers.
    pub fn is_chat(self) -> bool {
        matches!(self, ServerKind::Chat | ServerKind::Ngircd)
    }

    /// Whether it is a reference server (nginx, ngircd): someone else's
    /// program with one architecture.
    pub fn is_reference(self) -> bool {
        matches!(self, ServerKind::Nginx | ServerKind::Ngircd)
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Comparing with a name (`server == "chat"`) reads as the `String` it
/// replaced did, for code that only reads it.
impl PartialEq<str> for ServerKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ServerKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_kind_is_stored_as_the_name_it_replaced() {
        for s in ServerKind::ALL {
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
            assert_eq!(
                serde_json::from_str::<ServerKind>(&format!("\"{}\"", s.as_str())).unwrap(),
                s
            );
            assert_eq!(ServerKind::from_name(s.as_str()), Some(s));
        }
        assert_eq!(ServerKind::from_name("apache"), None);
        assert!(serde_json::from_str::<ServerKind>("\"apache\"").is_err());
    }
}
