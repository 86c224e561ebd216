//! `plan`: a run specification planned whole ([`Plan`]): its points
//! (`expand`) and every program's parameters parsed and checked once
//! (`program_params`), which the samples then run with. Uses `expand` and
//! `program_params`.

use smtlab_topology::Topology;
use smtlab_types::{Point, RunSpec};

use crate::expand::{expand, PlanError};
use crate::program_params::TypedPrograms;

/// A run's points and its programs' typed parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub points: Vec<Point>,
    pub programs: TypedPrograms,
}

/// Plan `spec` on `topo`: expand it into points, then parse and check
/// every program's parameters, before anything runs.
pub fn plan(topo: &Topology, spec: &RunSpec) -> Result<Plan, PlanError> {
    let points = expand(topo, spec)?;
    let programs = TypedPrograms::of(&points)?;
    Ok(Plan { points, programs })
}
