//! Execute: run one sample of a point under its execution model and return
//! what was measured.
//!
//! * [`builtin`]: built-in workloads, in worker processes that are exec'd
//!   (`smtlab __worker`) or forked, each running its share of the threads;
//!   synchronized start; see [`worker`] for the process side and
//!   [`protocol`] for the messages between the two.
//! * `co_run.rs`: programs co-running on their own CPUs for one window
//!   (the pairs study), each part sampled by `builtin` or `command`.
//! * [`server`]: servers (`-w web`, `-w nginx`), started on the point's
//!   CPUs and driven by the load generator on others for the window;
//!   [`chat_sample`] the same for the chat servers. Both start, find
//!   ready and stop their server through `server_lifecycle.rs`, and write
//!   their counters per operation with `per_op_counters.rs`.
//! * [`command`]: user commands (`--cmd`), one process per rank, started
//!   together, pinned with `smtlab pin`'s preload library (thread model) or
//!   confined to their CPUs (process model).
//! * [`dsm_sample`]: the ranks of a DSM application (`-w sor --comm
//!   thr2`), `smtlab __rank` processes on their nodes' CPUs, and the one
//!   conversion of a DSM report into a sample (`smtlab rank` uses it too).
//!
//! Bottom-up, the other files: [`protocol`] (the messages), `context.rs`
//! ([`SampleContext`]), `assemble.rs` (a built-in sample from its workers'
//! reports), [`worker`], then [`builtin`] and [`command`]; [`pin`] is
//! `smtlab pin` and the library `command` preloads; [`preload_check`]
//! checks, in a child, that an allocator's library really loads; `error.rs`
//! holds the errors ([`ExecError`]). `dispatch.rs` sends a sample to the
//! module of its program's kind ([`run_sample`]), a server's or a DSM
//! point's with the parameters planned for it (`smtlab_plan::TypedPrograms`,
//! in the context: nothing here parses a `--param`); `sampler.rs` makes a
//! [`SampleContext`] the engine's `smtlab_measure::Sampler` through it. A
//! sample's result is `smtlab_types::Outcome`. This root only declares and
//! re-exports.
//!
//! Every child started here dies with smtlab (PDEATHSIG) and is reaped
//! before a sample returns, whatever happened to it. A server's processes
//! and its directory are also named to the [`watchdog`], which kills and
//! removes them if smtlab itself is killed (PDEATHSIG does not reach
//! nginx's workers, nor ngircd once it switched users).

mod assemble;
pub mod builtin;
pub mod chat_sample;
mod co_run;
pub mod command;
mod context;
mod dispatch;
pub mod dsm_sample;
mod error;
mod per_op_counters;
pub mod pin;
pub mod preload_check;
pub mod protocol;
mod sampler;
pub mod server;
mod server_lifecycle;
pub mod watchdog;
pub mod worker;

pub use context::SampleContext;
pub use dispatch::run_sample;
pub use error::ExecError;
