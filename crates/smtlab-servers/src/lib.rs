//! smtlab's built-in servers and load generators (issue 17: `web`).
//!
//! * [`fileset`]: the SPECweb96-like file set, its request mix, and the
//!   content function that lets a client verify every body;
//! * [`http`]: HTTP/1.x parsing (httparse), the document root, response
//!   heads: the pure steps every architecture shares;
//! * [`web`]: the static server in four architectures (`process`,
//!   `thread`, `event`, `staged`);
//! * [`load`]: the HTTP load generator (closed and open loop);
//! * [`chatload`]: the IRC chat load generator (VolanoMark's rooms,
//!   closed and open loop, every delivery checked);
//! * [`chat`]: the IRC chat server in three models (`thread2`, `thread`,
//!   `event`; issue 18).
//!
//! At the workloads layer: below plan and execute, above the record types
//! and `smtlab-sys`.

pub mod chat;
pub mod chatload;
pub mod fileset;
pub mod http;
pub mod load;
pub mod reference;
pub mod web;
