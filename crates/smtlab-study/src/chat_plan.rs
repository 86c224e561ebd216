//! The chat study's plan (`smtlab study chat`): smtlab's chat server as
//! `thread2` (VolanoMark's two threads per connection), `thread` and
//! `event`, and ngircd beside them, each at every connection count of the
//! sweep (20 to 10,000 in rooms of 20), one worker on the servers' CPUs,
//! the load generator on CPUs of its own (the last quarter of the cores,
//! as in the web study).
//!
//! What the machine allows is checked here, before anything runs, and said:
//! every connection takes a descriptor in the server and one in smtlab's
//! load generator (the open-file limit is raised to its hard limit; a
//! count past it is not planned), and `thread2` and `thread` need a thread
//! per connection (two for `thread2`), bounded by the user's process limit,
//! the kernel's `threads-max` and `vm.max_map_count` (two mappings per
//! thread): a count past them is not planned for that model.

use std::collections::BTreeMap;

use smtlab_plan::{expand, PlanError};
use smtlab_topology::Topology;
use smtlab_types::cpuset::CpuSet;
use smtlab_types::{Model, Point, Program, RunSpec, ServerKind, StudyKind, StudyMeta};

use crate::client_cpus::{client_cpus, give_client_cpus, shared_core_limit};
use crate::error::NgircdMissing;

/// The models of smtlab's chat server, the paper's first.
pub const CHAT_MODELS: [Model; 3] = [Model::Thread2, Model::Thread, Model::Event];
/// The default sweep of connections (rooms of 20).
pub const CONNECTIONS: [usize; 6] = [20, 200, 1_000, 2_000, 5_000, 10_000];
/// Descriptors kept aside besides the connections (stdio, the store,
/// epoll instances, counters).
const FD_MARGIN: u64 = 200;

/// What the machine allows, read by the caller (so the plan can be tested
/// with any values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The open-file hard limit (the soft one is raised to it).
    pub nofile: u64,
    /// Threads one process may have: the least of `RLIMIT_NPROC`,
    /// `kernel.threads-max` and `vm.max_map_count / 2`.
    pub threads: u64,
}

impl Limits {
    /// This machine's.
    pub fn here() -> Limits {
        use nix::sys::resource::{getrlimit, Resource};
        let nofile = getrlimit(Resource::RLIMIT_NOFILE).map_or(1024, |(_, hard)| hard);
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
        };
        let nproc = getrlimit(Resource::RLIMIT_NPROC).map_or(u64::MAX, |(soft, _)| soft);
        let threads = [
            nproc,
            read("/proc/sys/kernel/threads-max").unwrap_or(u64::MAX),
            read("/proc/sys/vm/max_map_count").map_or(u64::MAX, |m| m / 2),
        ]
        .into_iter()
        .min()
        .unwrap_or(u64::MAX);
        Limits { nofile, threads }
    }
}

/// Whether ngircd can be measured here: the caller says
/// ([`NgircdMissing::here`] looks for the binary); `Err` says why not.
pub type NgircdHere = Result<(), NgircdMissing>;

/// What the user asked of the chat study (all optional).
#[derive(Debug, Clone, Default)]
pub struct ChatAsk {
    /// `--param` and `--client-cpus`, on every server of the sweep.
    pub given: BTreeMap<String, String>,
    /// `--client-cpus`.
    pub given_cpus: Option<CpuSet>,
    pub models: Option<Vec<Model>>,
    pub threads: Option<Vec<usize>>,
    /// `--connections`.
    pub connections: Option<Vec<usize>>,
}

/// Plan the chat study; `base` holds sampling, allocators, mode and seed.
pub fn plan_chat(
    topo: &Topology,
    base: RunSpec,
    ask: ChatAsk,
    ngircd: NgircdHere,
    limits: Limits,
) -> Result<(RunSpec, Vec<Point>), PlanError> {
    let ChatAsk {
        given,
        given_cpus,
        models,
        threads,
        connections,
    } = ask;
    let mut study_limits = Vec::new();
    let mut notes = Vec::new();
    let client = client_cpus(topo);
    let usable = topo.online().intersection(&topo.allowed());
    if client.is_empty() {
        study_limits.push(shared_core_limit());
    } else {
        notes.push(format!(
            "The load generator runs on CPUs {client}, the servers on the others ({}).",
            usable.difference(&client)
        ));
    }
    let models = models.unwrap_or_else(|| CHAT_MODELS.to_vec());
    let wanted = connections.unwrap_or_else(|| CONNECTIONS.to_vec());
    let counts = within_open_files(&wanted, limits, &mut study_limits);
    let with_ngircd = ngircd.is_ok() && models.contains(&Model::Event);
    let programs = servers(&counts, (&given, given_cpus.as_ref()), &client, with_ngircd);
    ngircd_sentences(&ngircd, &models, &counts, &mut study_limits, &mut notes);
    let threads = threads.unwrap_or_else(|| vec![1]);
    let spec = RunSpec {
        programs,
        models: models.clone(),
        placements: vec!["compact".parse().expect("a study's own placement is valid")],
        threads,
        ..base
    };
    let mut points = within_threads(expand(topo, &spec)?, limits, &mut study_limits);
    if counts.iter().any(|&c| c >= 5_000) {
        notes.push(
            "Each sample starts a server and registers every client before the first message \
             (10,000 clients take ngircd about half a minute): the large counts dominate the \
             study's time."
                .to_string(),
        );
    }
    for (i, p) in points.iter_mut().enumerate() {
        p.index = i;
    }
    let mut spec = spec;
    spec.study = Some(StudyMeta {
        kind: StudyKind::Chat,
        limits: study_limits,
        notes,
    });
    Ok((spec, points))
}

/// The connection counts the open-file limit holds: each connection is a
/// descriptor in the server and one in the load generator (in smtlab's
/// process). Those past it are said in `study_limits`.
fn within_open_files(
    wanted: &[usize],
    limits: Limits,
    study_limits: &mut Vec<String>,
) -> Vec<usize> {
    let fit = limits.nofile.saturating_sub(FD_MARGIN);
    let (counts, too_many): (Vec<usize>, Vec<usize>) =
        wanted.iter().partition(|&&c| c as u64 <= fit);
    if !too_many.is_empty() {
        study_limits.push(format!(
            "Not measured: {} connections: the open-file limit here is {} (hard), and each \
             connection takes a descriptor in the server and one in the load generator; raise \
             it (ulimit -Hn, or LimitNOFILE for a service) to measure them.",
            list(&too_many),
            limits.nofile
        ));
    }
    counts
}

/// smtlab's chat server at every count, and ngircd beside it when
/// `with_ngircd`; each with the user's parameters and `--client-cpus`
/// (`given`), else the client CPUs.
fn servers(
    counts: &[usize],
    given: (&BTreeMap<String, String>, Option<&CpuSet>),
    client: &CpuSet,
    with_ngircd: bool,
) -> Vec<Program> {
    let server = |server: ServerKind, c: usize| {
        let mut params = given.0.clone();
        params.insert("connections".to_string(), c.to_string());
        let mut program = Program::Server {
            server,
            params,
            client_cpus: given.1.cloned(),
        };
        give_client_cpus(&mut program, client);
        program
    };
    let mut programs = Vec::new();
    for &c in counts {
        programs.push(server(ServerKind::Chat, c));
        if with_ngircd {
            programs.push(server(ServerKind::Ngircd, c));
        }
    }
    programs
}

/// What shapes ngircd's numbers (measured and read from its source), or
/// why it is not measured, or that it needs the event model.
fn ngircd_sentences(
    ngircd: &NgircdHere,
    models: &[Model],
    counts: &[usize],
    study_limits: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    if ngircd.is_ok() && !counts.is_empty() {
        let conf = smtlab_chat::ngircd::NgircdConfig {
            listen: ([127, 0, 0, 1], 6667).into(),
            max_connections: counts.iter().max().copied().unwrap_or(0) + 100,
            dir: std::env::temp_dir(),
        };
        notes.extend(smtlab_chat::ngircd::limits_note(&conf));
    }
    match ngircd {
        Err(why) => study_limits.push(format!("ngircd is not measured: {why}.")),
        Ok(()) if !models.contains(&Model::Event) => notes.push(
            "ngircd (one process, one thread, one event loop) is measured with the event \
             model, which --model left out."
                .to_string(),
        ),
        Ok(()) => {}
    }
}

/// The points whose model the thread limit holds: `thread2` and `thread`
/// (smtlab's) need a thread per connection (two for `thread2`). Those past
/// it are said in `study_limits`, by model.
fn within_threads(
    expanded: Vec<Point>,
    limits: Limits,
    study_limits: &mut Vec<String>,
) -> Vec<Point> {
    let mut points = Vec::new();
    let mut skipped: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for p in expanded {
        let c = connections_of(&p);
        let need = match p.model {
            Model::Thread2 => 2 * c as u64 + 8,
            Model::Thread if matches!(&p.program, Program::Server { server, .. } if server == "chat") => {
                c as u64 + 8
            }
            _ => 0,
        };
        if need > limits.threads {
            skipped.entry(p.model.to_string()).or_default().push(c);
            continue;
        }
        points.push(p);
    }
    for (model, cs) in skipped {
        study_limits.push(format!(
            "Not measured: {model} at {} connections: it needs a thread per connection{} and a \
             process may have {} threads here (the least of its process limit, ulimit -u, \
             kernel.threads-max and half of vm.max_map_count).",
            list(&cs),
            if model == "thread2" {
                " and one more for writing"
            } else {
                ""
            },
            limits.threads
        ));
    }
    points
}

/// The connections of a chat point (its `connections` parameter).
pub fn connections_of(p: &Point) -> usize {
    match &p.program {
        Program::Server { params, .. } => params
            .get("connections")
            .and_then(|c| c.parse().ok())
            .unwrap_or(200),
        _ => 0,
    }
}

fn list(v: &[usize]) -> String {
    v.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> RunSpec {
        crate::testing::plan_base(1, 1)
    }

    const ROOMY: Limits = Limits {
        nofile: 1 << 20,
        threads: 1 << 20,
    };

    #[test]
    fn models_and_ngircd_at_every_count_apart_from_the_client() {
        let topo = smtlab_topology::synthetic::parse("core:2 pu:1").unwrap();
        let (spec, points) = plan_chat(&topo, base(), ChatAsk::default(), Ok(()), ROOMY).unwrap();
        // 6 counts x (3 models + ngircd).
        assert_eq!(points.len(), 24);
        assert!(points.iter().all(|p| p.cpus.as_deref() == Some(&[0][..])));
        let labels: Vec<String> = points.iter().map(|p| p.program.label()).collect();
        assert!(labels.contains(&"chat connections=10000".to_string()));
        assert!(labels.contains(&"ngircd connections=20".to_string()));
        let ngircd: Vec<&Point> = points
            .iter()
            .filter(|p| p.program.label().starts_with("ngircd"))
            .collect();
        assert!(ngircd.iter().all(|p| p.model == Model::Event));
        let meta = spec.study.unwrap();
        assert_eq!(meta.kind, StudyKind::Chat);
        assert!(
            meta.notes.iter().any(|n| n.contains("CPUs 1")),
            "{:?}",
            meta.notes
        );
    }

    #[test]
    fn what_the_machine_cannot_hold_is_not_planned_and_said() {
        let topo = smtlab_topology::synthetic::parse("core:2 pu:1").unwrap();
        let tight = Limits {
            nofile: 4096,
            threads: 3000,
        };
        let given: BTreeMap<String, String> = [("messages".to_string(), "3".to_string())].into();
        let (spec, points) = plan_chat(
            &topo,
            base(),
            ChatAsk {
                given,
                ..ChatAsk::default()
            },
            Err(NgircdMissing),
            tight,
        )
        .unwrap();
        assert!(points.iter().all(
            |p| matches!(&p.program, Program::Server { params, .. } if params["messages"] == "3")
        ));
        let meta = spec.study.unwrap();
        let counts: Vec<usize> = points.iter().map(connections_of).collect();
        assert!(counts.iter().all(|&c| c <= 2000), "{counts:?}");
        assert!(
            meta.limits
                .iter()
                .any(|l| l.contains("5000, 10000 connections") && l.contains("4096")),
            "{:?}",
            meta.limits
        );
        // thread2 needs 4,008 threads at 2,000 connections: not planned.
        assert!(!points
            .iter()
            .any(|p| p.model == Model::Thread2 && connections_of(p) == 2000));
        assert!(points
            .iter()
            .any(|p| p.model == Model::Thread && connections_of(p) == 2000));
        assert!(
            meta.limits
                .iter()
                .any(|l| l.starts_with("Not measured: thread2 at 2000")),
            "{:?}",
            meta.limits
        );
        assert!(meta.limits.iter().any(|l| l
            == "ngircd is not measured: ngircd is not installed (Debian: apt-get \
                            install ngircd; scripts/setup.sh installs it)."));
    }
}
