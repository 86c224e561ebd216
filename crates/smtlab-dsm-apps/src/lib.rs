//! The applications of the software-DSM study (after JIAJIA's
//! "Communication with Threads in Software DSMs"): SOR, LU and TSP,
//! written against a small shared-memory interface ([`Shared`]) and each
//! with a sequential reference that verifies it.
//!
//! * [`shared`]: what an application sees of the DSM;
//! * [`params`]: the apps by name and their `--param`s, checked once;
//! * [`sor`], [`lu`], [`tsp`]: each a parallel `run` (every rank calls it)
//!   and a plain `sequential` reference doing the same arithmetic;
//! * [`outcome`]: what a run reports and [`verify`];
//! * [`error`]: why parameters are refused ([`ParamError`]) and why a run
//!   does not verify ([`VerifyError`]);
//! * [`app`]: [`app_allocations`], [`run_app`], [`sequential_app`],
//!   [`verify_app`], the calls the DSM crate needs;
//! * [`local`] and [`scoped`]: [`Shared`] over threads in one process, for
//!   tests — `local` with plain shared memory, `scoped` with a private
//!   copy per rank where a write crosses only from a release to a matching
//!   acquire, which catches a missing barrier or lock every time.
//!
//! Every app synchronises only as scope consistency requires: data
//! written by another rank is read only after a barrier that follows the
//! write, or under the lock it was written under. Lock ids used: TSP's
//! [`tsp::QUEUE_LOCK`] (0) and [`tsp::BEST_LOCK`] (1); SOR and LU use
//! barriers only.
//!
//! Calls nothing else in smtlab; `smtlab-dsm` calls it.

pub mod app;
mod append_only;
mod coordinator;
pub mod error;
pub mod local;
pub mod lu;
pub mod outcome;
pub mod params;
pub mod scoped;
pub mod shared;
pub mod sor;
pub mod tsp;

pub use app::{app_allocations, run_app, sequential_app, verify_app};
pub use error::{ParamError, VerifyError};
pub use local::{run_ranks, LocalShared};
pub use outcome::{verify, Matrix, Outcome};
pub use params::{App, AppParams, LuParams, ParamSpec, SorParams, TspParams, APPS, DSM_PARAMS};
pub use scoped::{run_ranks_scoped, run_ranks_scoped_traffic, ScopedShared, Traffic};
pub use shared::{Home, Region, Shared, Words};
