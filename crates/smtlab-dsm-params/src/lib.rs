//! The DSM's parameters and the check of a DSM point ([`params`]): its own
//! `--param`s (loss, ranks per node), its rank limits, and the size of a
//! run's shared region for an application.
//!
//! A crate of its own so that planning (`smtlab-plan`) can refuse a bad DSM
//! point before anything runs without building the DSM; the DSM
//! (`smtlab-dsm`) uses the same table and re-exports it.

pub mod error;
pub mod params;

pub use error::DsmParamError;

pub use params::{
    check_params, max_region_pages, pages_of, region_pages, DsmParams, DsmPointParams, RanksFrom,
    MAX_LOSS, MAX_RANKS,
};
