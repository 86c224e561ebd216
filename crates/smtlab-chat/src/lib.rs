//! smtlab's chat product (issue 18: `chat`): an IRC chat server and the
//! load generator that measures it.
//!
//! * [`server`]: the IRC chat server in three models (`thread2`, `thread`,
//!   `event`);
//! * [`load`]: the IRC chat load generator (VolanoMark's rooms, closed and
//!   open loop, every delivery checked);
//! * [`params`]: a chat point's parameters, parsed and checked once when
//!   the run is planned ([`params::ChatParams`]);
//! * [`ngircd`]: Debian's ngircd, the reference IRC server: where it is,
//!   the configuration smtlab starts it with, and the limits of ngircd
//!   that shape a chat measurement (starting, measuring and stopping it is
//!   the executor's).
//!
//! What the web product shares with this one (the worker-CPU check,
//! latency percentiles, the load generator's CPU accounting) is in
//! `smtlab-serving`, below both. At the workloads layer: below plan and
//! execute, above the record types and `smtlab-sys`.

pub mod load;
pub mod ngircd;
pub mod params;
pub mod server;
