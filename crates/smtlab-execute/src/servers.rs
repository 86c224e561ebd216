//! The servers `-w` names, and the check of their parameters when a run
//! is planned: the web server and nginx (`server`), the chat server and
//! ngircd (`chat_sample`). Uses `server` and `chat_sample`.

use std::collections::BTreeMap;

use crate::chat_sample::{ChatParams, CHAT_SERVERS};
use crate::error::ServerParamError;
use crate::server::{ServerParams, WEB_SERVERS};

/// Every server `-w` names.
pub const SERVERS: [&str; 4] = [
    WEB_SERVERS[0],
    WEB_SERVERS[1],
    CHAT_SERVERS[0],
    CHAT_SERVERS[1],
];

/// Check a server point's `--param`s (and `client_cpus`) when the run is
/// planned; the message names the parameter and what would be valid.
pub fn check_params(
    server: &str,
    params: &BTreeMap<String, String>,
) -> Result<(), ServerParamError> {
    if CHAT_SERVERS.contains(&server) {
        ChatParams::parse(server, params).map(|_| ())
    } else {
        ServerParams::parse(server, params).map(|_| ())
    }
}
