//! The web study's plan (`smtlab study web`): smtlab's web server in its
//! four architectures and nginx beside them, at 1..N workers, on SMT
//! siblings first (`compact`: the paper's "SMT on") and one worker per
//! core (`core`: "SMT off"), each point a server on its CPUs driven by the
//! load generator on CPUs of its own.
//!
//! The machine is split once: the last quarter of its cores (at least
//! one) drive the load, the others serve. A point whose CPUs would reach
//! the load generator's is not planned (said in a note), so the two never
//! take turns on a CPU. On a machine without SMT the two placements pick
//! the same CPUs and the study says what it cannot show.

use std::collections::BTreeMap;

use smtlab_plan::{expand, PlanError};
use smtlab_topology::Topology;
use smtlab_types::cpuset::CpuSet;
use smtlab_types::{Model, Point, Program, RunSpec, ServerKind, StudyKind, StudyMeta};

pub use crate::client_cpus::client_cpus;
use crate::client_cpus::{give_client_cpus, shared_core_limit};
use crate::error::NginxMissing;
use crate::shape::{ladder, no_smt_sentence, shape, Shape};

/// The architectures of smtlab's web server, in the paper's order of
/// appearance (Apache prefork and worker, Flash, Haboob).
pub const WEB_MODELS: [Model; 4] = [Model::Process, Model::Thread, Model::Event, Model::Staged];

/// Whether nginx can be measured here: the caller says
/// ([`NginxMissing::here`] looks for the binary); `Err` says why not.
pub type NginxHere = Result<(), NginxMissing>;

/// How the study splits the machine: the load generator's CPUs, the
/// servers' CPUs and how many cores those span.
struct Split {
    client: CpuSet,
    serving: CpuSet,
    server_cores: usize,
}

impl Split {
    fn of(topo: &Topology) -> Split {
        let client = client_cpus(topo);
        let usable = topo.online().intersection(&topo.allowed());
        let serving = usable.difference(&client);
        let server_cores = topo
            .cores
            .iter()
            .filter(|c| c.cpus.intersects(&serving))
            .count()
            .max(1);
        Split {
            client,
            serving,
            server_cores,
        }
    }
}

/// Plan the web study on `topo`: `base` holds what every study sets (the
/// user's programs, if any, sampling, allocators, mode, seed); the
/// servers, models, placements and N are set here, where the user left
/// them open. Returns the specification (with the study's limits and
/// notes) and its points, each server point's CPUs apart from the load
/// generator's.
pub fn plan_web(
    topo: &Topology,
    base: RunSpec,
    models: Option<Vec<Model>>,
    threads: Option<Vec<usize>>,
    nginx: NginxHere,
) -> Result<(RunSpec, Vec<Point>), PlanError> {
    let sh = shape(topo);
    let split = Split::of(topo);
    let (mut limits, mut notes) = machine_sentences(topo, sh, &split);
    let models = models.unwrap_or_else(|| WEB_MODELS.to_vec());
    let programs = servers(
        &base.programs,
        &models,
        nginx,
        &split.client,
        &mut limits,
        &mut notes,
    );
    let threads = threads.unwrap_or_else(|| ladder(split.serving.len().max(1)));
    let mut spec = RunSpec {
        programs,
        models,
        placements: ["compact", "core"]
            .iter()
            .map(|p| p.parse().expect("a study's own placements are valid"))
            .collect(),
        threads: threads.clone(),
        ..base
    };
    let (points, mut dropped) = apart_from_the_client(topo, &spec, &threads, &split)?;
    let (mut kept, twins) = measured_once(points);
    let core_points = kept.iter().filter(|p| p.placement == "core").count();
    if twins > 0 && core_points == 0 {
        notes.push(format!(
            "core picks the same CPUs as compact at every N on this machine ({} package{}, {} \
             cores, {} PU{} per core), so only compact was measured.",
            sh.packages,
            if sh.packages == 1 { "" } else { "s" },
            sh.cores,
            sh.pus_per_core,
            if sh.pus_per_core == 1 { "" } else { "s" },
        ));
    }
    dropped.sort();
    dropped.dedup();
    if !dropped.is_empty() {
        notes.push(format!(
            "Not planned, as they would put server workers on the load generator's CPUs: {}.",
            dropped.join(", ")
        ));
    }
    // The placement measured once names itself only.
    let placements_left: Vec<String> = {
        let mut v: Vec<String> = kept.iter().map(|p| p.placement.clone()).collect();
        v.dedup();
        v
    };
    spec.placements
        .retain(|p| placements_left.contains(&p.text));
    for (i, p) in kept.iter_mut().enumerate() {
        p.index = i;
    }
    spec.study = Some(StudyMeta {
        kind: StudyKind::Web,
        limits,
        notes,
    });
    Ok((spec, kept))
}

/// What the machine's split lets the study show, and where the load
/// generator runs: the first limits and notes of the plan.
fn machine_sentences(topo: &Topology, sh: Shape, split: &Split) -> (Vec<String>, Vec<String>) {
    let Split {
        client,
        serving,
        server_cores,
    } = split;
    let mut limits = Vec::new();
    let mut notes = Vec::new();
    if client.is_empty() {
        limits.push(shared_core_limit());
    } else {
        notes.push(format!(
            "The load generator runs on CPUs {client} (the last {} of {} cores), the servers on \
             the others ({}).",
            sh.cores - server_cores,
            sh.cores,
            serving
        ));
    }
    if sh.pus_per_core <= 1 {
        limits.push(no_smt_sentence(
            topo,
            "whether SMT siblings pay for a web server (the paper: +12–32% for Apache, a quarter \
             to two fifths of what a second processor gives)",
        ));
    }
    if *server_cores <= 1 {
        limits.push(format!(
            "The servers have one core here ({}), so scaling over cores cannot be shown; with \
             more cores the study runs one worker per core at N = 1..cores beside SMT siblings.",
            if client.is_empty() {
                "the only one".to_string()
            } else {
                "the other drives the load".to_string()
            }
        ));
    }
    (limits, notes)
}

/// The servers measured: the user's, else smtlab's and nginx (where it is
/// here and the event model is asked for), each driving its load from the
/// client CPUs unless the user chose others; what is left out is said.
fn servers(
    given: &[Program],
    models: &[Model],
    nginx: NginxHere,
    client: &CpuSet,
    limits: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Vec<Program> {
    let server = |server: ServerKind| Program::Server {
        server,
        params: BTreeMap::new(),
        client_cpus: None,
    };
    let has_nginx = given
        .iter()
        .any(|p| matches!(p, Program::Server { server, .. } if server == "nginx"));
    let mut programs = given.to_vec();
    if programs.is_empty() {
        programs.push(server(ServerKind::Web));
        if nginx.is_ok() && models.contains(&Model::Event) {
            programs.push(server(ServerKind::Nginx));
        } else if nginx.is_ok() {
            notes.push(
                "nginx (one architecture: worker processes each running an event loop) is \
                 measured with the event model, which --model left out."
                    .to_string(),
            );
        }
    }
    if let (false, Err(why)) = (has_nginx, &nginx) {
        limits.push(format!("nginx is not measured: {why}."));
    }
    for p in &mut programs {
        give_client_cpus(p, client);
    }
    programs
}

/// Every placement's points at its N, those whose CPUs would reach the
/// load generator's left out (returned as `placement N=n`, for the note).
fn apart_from_the_client(
    topo: &Topology,
    spec: &RunSpec,
    threads: &[usize],
    split: &Split,
) -> Result<(Vec<Point>, Vec<String>), PlanError> {
    // `core` places one worker per core of the whole machine: beyond the
    // servers' cores it would reach the load generator's. Only the N it
    // can place are asked of it; they are planned below like the rest.
    let core_threads: Vec<usize> = threads
        .iter()
        .copied()
        .filter(|&n| n <= split.server_cores)
        .collect();
    let mut points = Vec::new();
    let mut dropped = Vec::new();
    for placement in spec.placements.clone() {
        let text = placement.text.clone();
        let ns = if text == "core" {
            core_threads.clone()
        } else {
            threads.to_vec()
        };
        if ns.is_empty() {
            continue;
        }
        let one = RunSpec {
            placements: vec![placement],
            threads: ns,
            ..spec.clone()
        };
        for p in expand(topo, &one)? {
            let reaches = p
                .cpus
                .as_ref()
                .is_some_and(|c| c.iter().any(|cpu| split.client.contains(*cpu)));
            if reaches {
                dropped.push(format!("{} N={}", p.placement, p.workers));
            } else {
                points.push(p);
            }
        }
    }
    Ok((points, dropped))
}

/// The points left once a point on the same CPUs as an earlier one (the
/// same program, model and allocator) is dropped: without SMT both
/// placements pick the same CPUs, measured once. Also how many went.
fn measured_once(points: Vec<Point>) -> (Vec<Point>, usize) {
    let mut kept: Vec<Point> = Vec::new();
    let mut twins = 0;
    for p in points {
        let twin = kept.iter().any(|k| {
            k.program == p.program && k.model == p.model && k.alloc == p.alloc && k.cpus == p.cpus
        });
        if twin {
            twins += 1;
        } else {
            kept.push(p);
        }
    }
    (kept, twins)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> RunSpec {
        crate::testing::plan_base(1, 1)
    }

    #[test]
    fn without_nginx_the_web_study_says_why_in_its_limits() {
        let topo = smtlab_topology::synthetic::parse("core:2 pu:1").unwrap();
        let (spec, points) = plan_web(&topo, base(), None, None, Err(NginxMissing)).unwrap();
        assert!(points
            .iter()
            .all(|p| !p.program.label().starts_with("nginx")));
        let limits = spec.study.unwrap().limits;
        assert!(
            limits.contains(
                &"nginx is not measured: nginx is not installed (Debian: apt-get install nginx; \
                  scripts/setup.sh installs it)."
                    .to_string()
            ),
            "{limits:?}"
        );
        let (_, points) = plan_web(&topo, base(), None, None, Ok(())).unwrap();
        assert!(points
            .iter()
            .any(|p| p.program.label() == "nginx" && p.model == Model::Event));
    }
}
