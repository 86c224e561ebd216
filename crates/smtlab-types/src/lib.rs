//! smtlab's record types: the plain data every stage of the pipeline hands
//! to the next (`topology → plan → execute → measure → store → analyse →
//! report`), serialisable with serde.
//!
//! This crate is the bottom of the workspace: it depends on nothing else in
//! smtlab and does no I/O, so every other crate may use it and a type here
//! can never tie a lower stage to a higher one. What it owns:
//!
//! * [`comm`]: how a rank of a DSM run notices requests (`--comm`);
//! * [`cpuset`]: sets of PU numbers and their kernel text forms;
//! * [`extras`]: the names of a sample's extras, shared by the programs
//!   that write them and the code that reads them back;
//! * [`point`]: a measurement point and its parts (program, model, spawn,
//!   mode, metric);
//! * [`policy`]: placement policies as written (syntax only);
//! * [`run_spec`]: what a run sweeps and how it samples;
//! * [`sample`]: what one measurement produces;
//! * [`run`]: a run as stored, and its host facts;
//! * [`outcome`]: what trying to take one sample gives (the engine's
//!   `Sampler` returns it);
//! * [`sample_log`]: where the engine commits samples ([`SampleLog`], which
//!   the store implements): the contract lives here so that the store does
//!   not depend on the engine;
//! * [`server_kind`]: which server a server point runs ([`ServerKind`]);
//! * [`study`]: which question a run answers, and what the machine could not
//!   show;
//! * [`table`]: a table of text cells for reports.

pub mod comm;
pub mod cpuset;
pub mod extras;
pub mod outcome;
pub mod point;
pub mod policy;
pub mod run;
pub mod run_spec;
pub mod sample;
pub mod sample_log;
pub mod server_kind;
pub mod study;
pub mod table;

pub use comm::{Comm, CommError};
pub use cpuset::{CpuSet, CpuSetError};
pub use outcome::Outcome;
pub use point::{
    CoPart, Metric, Mode, Model, ModelError, Point, Program, Spawn, SpawnError,
    StoredClientCpusError, MAX_WORKERS, VARIANT_PARAMS,
};
pub use policy::{Policy, PolicyError, PolicySpec};
pub use run::{HostFacts, RunRecord, RunStatus, RunSummary, SharedHost};
pub use run_spec::{MetricRegex, MetricSpec, RunSpec};
pub use sample::{
    CounterScope, CounterStatus, CounterValue, ResourceUsage, Sample, SampleStatus, WorkerSample,
};
pub use sample_log::SampleLog;
pub use server_kind::{ServerKind, CLIENT_CPUS_PARAM};
pub use study::{StudyKind, StudyMeta, UnknownStudy};
pub use table::Table;
