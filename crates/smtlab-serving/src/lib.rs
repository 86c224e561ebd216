//! What smtlab's two server products share, below both of them: the web
//! server with its HTTP load generator (`smtlab-web`) and the IRC chat
//! server with its chat load generator (`smtlab-chat`).
//!
//! * [`worker_cpus`]: whether a server's worker CPUs are ones this process
//!   may run on, checked before any worker starts;
//! * [`latency`]: the latency percentiles both load generators report;
//! * [`cpu`]: a load generator's own CPU time, and when it, not the
//!   server, was the bottleneck;
//! * [`client_cpus`]: which CPUs a load generator pins itself to (those
//!   the server it drives does not use);
//! * [`models`]: a server's models as an enum with their names
//!   ([`server_models!`]);
//! * [`error_counts`]: errors by kind, as both load generators print them;
//! * [`server_params`]: what both servers' parameter checks share (the
//!   refusals, a count in range, `client_cpus`).
//!
//! At the workloads layer, above the record types and `smtlab-sys`.

pub mod client_cpus;
pub mod cpu;
pub mod error_counts;
pub mod latency;
pub mod models;
pub mod server_params;
pub mod worker_cpus;

pub use cpu::CLIENT_BOUND_SHARE;
pub use error_counts::errors_list;
pub use latency::Latency;
pub use server_params::ServerParamError;
pub use worker_cpus::check_worker_cpus;
