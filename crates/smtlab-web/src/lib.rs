//! smtlab's web product (issue 17: `web`): a static HTTP server, the file
//! set it serves and the load generator that measures it.
//!
//! * [`fileset`]: the SPECweb96-like file set, its request mix, and the
//!   content function that lets a client verify every body;
//! * [`http`]: HTTP/1.x parsing (httparse), the document root, response
//!   heads: the pure steps every architecture shares;
//! * [`server`]: the static server in four architectures (`process`,
//!   `thread`, `event`, `staged`);
//! * [`load`]: the HTTP load generator (closed and open loop);
//! * [`params`]: a web server point's parameters, parsed and checked once
//!   when the run is planned ([`params::WebParams`]);
//! * [`nginx`]: Debian's nginx, the reference server: where it is, and the
//!   configuration smtlab starts it with (starting, measuring and stopping
//!   it is the executor's, like every other program smtlab measures).
//!
//! What the chat product shares with this one (the worker-CPU check,
//! latency percentiles, the load generator's CPU accounting) is in
//! `smtlab-serving`, below both. At the workloads layer: below plan and
//! execute, above the record types and `smtlab-sys`.

pub mod fileset;
pub mod http;
pub mod load;
pub mod nginx;
pub mod params;
pub mod server;
