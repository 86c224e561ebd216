//! What several of this crate's integration tests share.

use smtlab_msg::{Config, Endpoint, UdpTransport};

/// Two transports on 127.0.0.1, each knowing both addresses, with their
/// endpoints (ranks 0 and 1, default configuration).
pub fn udp_pair() -> (Vec<UdpTransport>, Vec<Endpoint>) {
    let mut transports: Vec<UdpTransport> = (0..2)
        .map(|_| UdpTransport::bind("127.0.0.1:0").unwrap())
        .collect();
    let addrs: Vec<_> = transports.iter().map(|t| t.local_addr().unwrap()).collect();
    for t in &mut transports {
        t.set_peers(addrs.clone());
    }
    let endpoints = (0..2)
        .map(|r| Endpoint::new(r, Config::new(2)).unwrap())
        .collect();
    (transports, endpoints)
}
