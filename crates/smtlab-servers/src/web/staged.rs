//! The `staged` architecture (see the module docs of [`super`]). Not built yet.

use std::io;
use std::net::TcpListener;
use std::sync::Arc;

use super::{Counters, Running, ServerConfig, ServerStats};
use crate::http::Site;

pub(crate) struct Stub;

impl Running for Stub {
    fn stats(&self) -> ServerStats {
        ServerStats::default()
    }
    fn stop(&mut self) -> io::Result<()> {
        Ok(())
    }
}

pub(crate) fn start(
    _config: &ServerConfig,
    _listener: TcpListener,
    _site: Site,
    _counters: Arc<Counters>,
) -> io::Result<Stub> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "the staged model is not built yet"))
}
