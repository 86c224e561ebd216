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
//! * [`error_counts`]: errors by kind, as both load generators print them.
//!
//! At the workloads layer, above the record types and `smtlab-sys`.

pub mod client_cpus;
pub mod cpu;
pub mod error_counts;
pub mod latency;
pub mod worker_cpus;

pub use cpu::CLIENT_BOUND_SHARE;
pub use error_counts::errors_list;
pub use latency::Latency;
pub use worker_cpus::check_worker_cpus;
