//! A web server point's parameters (`-w web`, `-w nginx`: `--param K=V`
//! and `--client-cpus`), parsed and checked once, when the run is planned,
//! into [`WebParams`], which the sample then runs with as they are.

use std::collections::BTreeMap;

use smtlab_serving::server_params::{self, ServerParamError};
use smtlab_types::{CpuSet, ServerKind, CLIENT_CPUS_PARAM};

use crate::fileset::{parse_size, FileSet, FileSetError, DEFAULT_DIRS};
use crate::load::MAX_CONNECTIONS;

/// The web servers: smtlab's own and nginx.
pub const WEB_SERVERS: [ServerKind; 2] = [ServerKind::Web, ServerKind::Nginx];
/// The parameters a web server point takes (`--param K=V`); `helpers` is
/// smtlab's own server's only.
pub const WEB_PARAMS: [&str; 5] = ["files", "connections", "keepalive", "url", "helpers"];
/// The most `helpers` of the event model.
const MAX_HELPERS: usize = 1024;

/// How a web server point is measured, from its `--param`s and
/// `--client-cpus`.
#[derive(Debug, Clone, PartialEq)]
pub struct WebParams {
    /// `files=SIZE`: the file set (default about 51 MB: fits the page cache).
    pub files: FileSet,
    /// `connections=C`: the load generator's connections (default: two per
    /// server worker, so a blocking server always has a request waiting).
    pub connections: Option<usize>,
    /// `keepalive=0|1` (default 0: a new connection per request, as
    /// SPECweb96's HTTP/1.0 clients; with 1 a blocking server keeps a
    /// worker per connection, so give connections <= workers).
    pub keep_alive: bool,
    /// `url=PATH`: ask for this path only (e.g. a 1 KB file:
    /// `/dir00000/class1_0`) instead of the SPECweb96 mix.
    pub url: Option<String>,
    /// `helpers=K`: the `event` model's helper threads (web only).
    pub helpers: Option<usize>,
    /// Where the load generator runs (`--client-cpus`); default: the CPUs
    /// the server does not use.
    pub client_cpus: Option<CpuSet>,
}

/// A web server point's parameter refused; each message names the
/// parameter (or the server) and says what would be valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebParamError {
    #[error("--workload {server}: not a web server; web servers: {}", servers.map(|s| s.as_str()).join(", "))]
    NotAWebServer {
        server: ServerKind,
        servers: [ServerKind; 2],
    },
    #[error("--param files={value}: expected a size such as 5MB, 50MB or 500MB")]
    NotASize { value: String },
    /// A size the file set cannot be made of (its error says why).
    #[error("--param files={value}: {error}")]
    FileSet { value: String, error: FileSetError },
    #[error("--param keepalive={value}: expected 0 or 1")]
    KeepAlive { value: String },
    #[error(
        "--param url={value}: expected a path that starts with / (e.g. /dir00000/class1_0, a 1 \
         KB file)"
    )]
    Url { value: String },
    /// A count out of range, `client_cpus`, a parameter it does not take.
    #[error(transparent)]
    Server(#[from] ServerParamError),
}

impl WebParams {
    /// Parse and check `server`'s parameters; `client_cpus`, the CPUs
    /// `--client-cpus` gave, wins over a `client_cpus` parameter.
    pub fn parse(
        server: ServerKind,
        params: &BTreeMap<String, String>,
        client_cpus: Option<&CpuSet>,
    ) -> Result<WebParams, WebParamError> {
        if !WEB_SERVERS.contains(&server) {
            return Err(WebParamError::NotAWebServer {
                server,
                servers: WEB_SERVERS,
            });
        }
        let mut p = WebParams {
            files: FileSet::with_dirs(DEFAULT_DIRS).expect("the default file set is valid"),
            connections: None,
            keep_alive: false,
            url: None,
            helpers: None,
            client_cpus: None,
        };
        for (k, v) in params {
            p.set(server, k, v)?;
        }
        if let Some(set) = client_cpus {
            p.client_cpus = Some(set.clone());
        }
        Ok(p)
    }

    /// Set parameter `k` to the value `v` says, or refuse it.
    fn set(&mut self, server: ServerKind, k: &str, v: &str) -> Result<(), WebParamError> {
        match k {
            "files" => {
                let bytes =
                    parse_size(v).ok_or_else(|| WebParamError::NotASize { value: v.into() })?;
                self.files =
                    FileSet::with_total_bytes(bytes).map_err(|error| WebParamError::FileSet {
                        value: v.into(),
                        error,
                    })?;
            }
            "connections" => {
                self.connections = Some(server_params::count(k, v, 1, MAX_CONNECTIONS)?);
            }
            "keepalive" => {
                self.keep_alive = match v {
                    "1" | "true" | "on" => true,
                    "0" | "false" | "off" => false,
                    _ => return Err(WebParamError::KeepAlive { value: v.into() }),
                }
            }
            "url" => {
                let clean =
                    v.starts_with('/') && !v.chars().any(|c| c.is_whitespace() || c.is_control());
                if !clean {
                    return Err(WebParamError::Url { value: v.into() });
                }
                self.url = Some(v.into());
            }
            "helpers" if server == ServerKind::Web => {
                self.helpers = Some(server_params::count(k, v, 0, MAX_HELPERS)?);
            }
            CLIENT_CPUS_PARAM => self.client_cpus = Some(server_params::client_cpus(v)?),
            _ => return Err(unknown(server, k).into()),
        }
        Ok(())
    }

    /// The load generator's connections for `workers` server workers.
    pub fn connections_for(&self, workers: usize) -> usize {
        self.connections.unwrap_or(2 * workers).min(MAX_CONNECTIONS)
    }
}

/// The web parameter `param` is not one of `server`'s (`helpers` is
/// smtlab's own server's only).
fn unknown(server: ServerKind, param: &str) -> ServerParamError {
    let takes = WEB_PARAMS
        .iter()
        .copied()
        .filter(|k| server == ServerKind::Web || *k != "helpers")
        .collect();
    ServerParamError::Unknown {
        server,
        param: param.into(),
        takes,
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
    fn parameters_parse_into_their_types() {
        let p = WebParams::parse(ServerKind::Web, &kv(&[]), None).unwrap();
        assert_eq!(p.files.dirs, DEFAULT_DIRS);
        assert_eq!(
            (p.connections, p.keep_alive, p.helpers),
            (None, false, None)
        );
        assert_eq!(p.connections_for(3), 6);
        let p = WebParams::parse(
            ServerKind::Web,
            &kv(&[
                ("files", "5MB"),
                ("connections", "8"),
                ("keepalive", "1"),
                ("url", "/dir00000/class1_0"),
                ("helpers", "2"),
                ("client_cpus", "1"),
            ]),
            None,
        )
        .unwrap();
        assert_eq!(
            (p.connections, p.keep_alive, p.helpers),
            (Some(8), true, Some(2))
        );
        assert_eq!(p.url.as_deref(), Some("/dir00000/class1_0"));
        assert_eq!(p.client_cpus.unwrap().iter().collect::<Vec<_>>(), vec![1]);
        assert!(p.files.dirs < DEFAULT_DIRS);
    }

    /// `--client-cpus` arrives as the set it was checked to be, and is
    /// the one the load generator gets.
    #[test]
    fn the_client_cpus_given_are_the_set_the_load_generator_gets() {
        let given = CpuSet::parse_list("2-3").unwrap();
        let p = WebParams::parse(ServerKind::Nginx, &kv(&[]), Some(&given)).unwrap();
        assert_eq!(p.client_cpus, Some(given.clone()));
        // The flag wins over a parameter of the same name, as before.
        let p =
            WebParams::parse(ServerKind::Web, &kv(&[("client_cpus", "1")]), Some(&given)).unwrap();
        assert_eq!(p.client_cpus, Some(given));
    }

    /// The CLI prints these as usage errors (exit 2), and tests of the
    /// CLI match them: each one, word for word.
    #[test]
    fn web_param_messages_name_the_parameter_and_what_is_valid() {
        let web = |pairs: &[(&str, &str)]| {
            WebParams::parse(ServerKind::Web, &kv(pairs), None)
                .unwrap_err()
                .to_string()
        };
        let cases = [
            (
                WebParams::parse(ServerKind::Chat, &kv(&[]), None)
                    .unwrap_err()
                    .to_string(),
                "--workload chat: not a web server; web servers: web, nginx",
            ),
            (
                web(&[("files", "huge")]),
                "--param files=huge: expected a size such as 5MB, 50MB or 500MB",
            ),
            (
                web(&[("connections", "0")]),
                "--param connections=0: expected 1 to 100000",
            ),
            (
                web(&[("keepalive", "maybe")]),
                "--param keepalive=maybe: expected 0 or 1",
            ),
            (
                web(&[("url", "index.html")]),
                "--param url=index.html: expected a path that starts with / (e.g. \
                 /dir00000/class1_0, a 1 KB file)",
            ),
            (
                web(&[("helpers", "2000")]),
                "--param helpers=2000: expected 0 to 1024",
            ),
            (
                web(&[("client_cpus", "x")]),
                "--client-cpus x: expected a CPU list such as 1 or 2-3",
            ),
            (
                web(&[("threads", "2")]),
                "--param threads: `web` has no such parameter; it takes files, connections, \
                 keepalive, url, helpers",
            ),
            (
                WebParams::parse(ServerKind::Nginx, &kv(&[("helpers", "1")]), None)
                    .unwrap_err()
                    .to_string(),
                "--param helpers: `nginx` has no such parameter; it takes files, connections, \
                 keepalive, url",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e, want);
        }
    }
}
