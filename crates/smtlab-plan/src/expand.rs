//! `expand`: a run specification into its points, program x allocator x
//! model x placement x N, with the checks that need the whole
//! specification and the machine ([`PlanError`]); the programs'
//! parameters are checked by `program_params`. Uses no other module of
//! this crate.

use smtlab_topology::placement::{place, PlacementError};
use smtlab_topology::Topology;
use smtlab_types::{Comm, Metric, Mode, Model, Point, Program, RunSpec, ServerKind, Spawn};
use smtlab_workloads::TimeMetric;

/// Why a run specification cannot be planned on a machine; every message
/// names the flag at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("--placement: {0}")]
    Placement(#[from] PlacementError),
    #[error("--threads: 0 workers; use 1 or more")]
    ZeroWorkers,
    #[error("--min-samples 0: at least 1 sample is needed")]
    ZeroMinSamples,
    #[error("--max-samples {max} is below --min-samples {min}")]
    MaxBelowMin { min: usize, max: usize },
    /// A study that puts one worker per core, given more workers than cores.
    #[error(
        "--threads: {n} workers but the cores study puts one worker per core and this \
         machine has {cores} usable cores; use N <= {cores}"
    )]
    MoreWorkersThanCores { n: usize, cores: usize },
    #[error("--workload {0}: no such workload")]
    NoSuchWorkload(String),
    /// A model that only servers run in, given for another program.
    #[error(
        "--model {model}: only servers (-w web, nginx, chat, ngircd) run as event, staged or \
         thread2; {program} runs as thread, process or hybrid:PxT"
    )]
    ServerOnlyModel { model: Model, program: String },
    /// A server in a model it does not have.
    #[error("--model {model}: the web server runs as process, thread, event or staged")]
    WebModel { model: Model },
    /// The chat server in a model it does not have.
    #[error("--model {model}: the chat server runs as thread2, thread or event")]
    ChatModel { model: Model },
    /// A reference server (nginx, ngircd), without `event` among the models.
    #[error("--model: {server} has one architecture ({what}); add event to --model to measure it")]
    ReferenceModel {
        server: ServerKind,
        what: &'static str,
    },
    /// A server measured by a count of work rather than over a window.
    #[error("--work: a server is measured over a window of load; use --duration (default {DEFAULT_SERVER_WINDOW_S} s)")]
    ServerWork,
    #[error(
        "--duration: workload `{workload}` solves a fixed problem; measure it with --work N \
         (N instances; default {default_work})"
    )]
    FixedProblem { workload: String, default_work: u64 },
    /// A sweep too large to plan, let alone measure: each worker of each
    /// point gets a CPU, and `--threads 1-65535` alone would take 8 GB.
    #[error(
        "the plan would place {workers} workers over {points} points; at most \
         {MAX_PLANNED_WORKERS} in one run: give fewer --threads counts, models, placements or \
         allocators"
    )]
    TooLarge { points: u128, workers: u128 },
    /// `--comm` without a program that has ranks to notice requests.
    #[error("--comm: only the DSM applications ({}) take a mechanism", smtlab_dsm_apps::APPS.join(", "))]
    CommWithoutDsm,
    /// A DSM application in a model other than processes.
    #[error(
        "--model {model}: the DSM applications ({}) run as processes, one per rank; use \
         --model process",
        smtlab_dsm_apps::APPS.join(", ")
    )]
    DsmModel { model: Model },
    /// `--spawn fork` for DSM ranks, which are always exec'd.
    #[error("--spawn fork: DSM ranks are started with exec, each its own program; drop --spawn")]
    DsmSpawn,
    /// `--work` or `--duration` for a DSM application, which solves one
    /// problem per sample.
    #[error(
        "{flag}: a DSM application solves one problem per sample, its size set by --param \
         (n=...); drop {flag}"
    )]
    DsmMode { flag: &'static str },
    /// A built-in workload's parameter: not one of its own, or not of its
    /// type.
    #[error(transparent)]
    WorkloadParam(#[from] smtlab_workloads::ParamError),
    /// A built-in workload's parameter out of its range.
    #[error("{error:#} (workload `{workload}`)")]
    WorkloadCheck {
        workload: String,
        error: smtlab_workloads::WorkloadError,
    },
    /// A web server's parameter (or `--client-cpus`).
    #[error(transparent)]
    WebParams(#[from] smtlab_web::params::WebParamError),
    /// A chat server's parameter (or `--client-cpus`).
    #[error(transparent)]
    ChatParams(#[from] smtlab_chat::params::ChatParamError),
    /// A DSM point's parameters or rank count, as `smtlab_dsm_params::check_params`
    /// words it (naming the parameter).
    #[error("{0}")]
    DsmParams(String),
}

/// The most worker placements (the sum of N over the points) one run may
/// plan: 40 MB of CPU numbers, far beyond any sweep worth measuring (a
/// 256-PU machine at every N from 1 to 1024 is 524,800).
pub const MAX_PLANNED_WORKERS: u128 = 10_000_000;

/// The window of load of a server sample without `--duration`, seconds.
pub const DEFAULT_SERVER_WINDOW_S: f64 = 1.0;

/// Expand a run configuration into its points, in a fixed order:
/// program, allocator, model, placement, N. The checks that need the whole
/// specification (sampling bounds, modes the workloads support, placements
/// on this machine) are made here, once, before anything runs.
pub fn expand(topo: &Topology, spec: &RunSpec) -> Result<Vec<Point>, PlanError> {
    if spec.min_samples == 0 {
        return Err(PlanError::ZeroMinSamples);
    }
    if spec.max_samples < spec.min_samples {
        return Err(PlanError::MaxBelowMin {
            min: spec.min_samples,
            max: spec.max_samples,
        });
    }
    let programs = with_ranks(spec)?;
    check_size(spec, programs.len())?;
    let mut points = Vec::new();
    for program in &programs {
        let mode = mode_of(program, spec)?;
        let metric = metric_of(program, spec, mode);
        check_models(program, &spec.models)?;
        for alloc in &spec.allocs {
            for &model in &spec.models {
                // nginx and ngircd have one architecture, planned as
                // `event`.
                if matches!(program, Program::Server { server, .. } if server.is_reference())
                    && model != Model::Event
                {
                    continue;
                }
                for placement in &spec.placements {
                    let counts: Vec<usize> = match model {
                        Model::Hybrid { processes, threads } => vec![processes * threads],
                        _ => spec.threads.clone(),
                    };
                    for n in counts {
                        if n == 0 {
                            return Err(PlanError::ZeroWorkers);
                        }
                        let placed = place(topo, &placement.policy, n)?;
                        points.push(Point {
                            index: points.len(),
                            program: program.clone(),
                            model,
                            spawn: spec.spawn,
                            placement: placement.text.clone(),
                            workers: n,
                            cpus: placed.cpus,
                            oversubscription: placed.oversubscription,
                            alloc: alloc.clone(),
                            mode,
                            metric: metric.clone(),
                        });
                    }
                }
            }
        }
    }
    Ok(points)
}

/// The programs of `spec` with each DSM application (`-w sor`, ...) made
/// into one [`Program::Ranks`] per mechanism of `--comm` (`sigio` when
/// none is given): the mechanism is an axis of the plan, like the model.
fn with_ranks(spec: &RunSpec) -> Result<Vec<Program>, PlanError> {
    let is_dsm = |p: &Program| {
        matches!(p, Program::Builtin { workload, .. }
            if smtlab_dsm_apps::APPS.contains(&workload.as_str()))
    };
    // A specification may name ranks directly (`smtlab rank` records its
    // one point so): they are planned as they are.
    let has_ranks = |p: &Program| is_dsm(p) || matches!(p, Program::Ranks { .. });
    if !spec.comms.is_empty() && !spec.programs.iter().any(has_ranks) {
        return Err(PlanError::CommWithoutDsm);
    }
    // Each mechanism once, in the order given: `--comm thr2,thr2` is one
    // point, as `-n 2,2` is.
    let mut comms: Vec<Comm> = Vec::with_capacity(spec.comms.len().max(1));
    for &c in &spec.comms {
        if !comms.contains(&c) {
            comms.push(c);
        }
    }
    if comms.is_empty() {
        comms.push(Comm::Sigio);
    }
    let mut out = Vec::new();
    for p in &spec.programs {
        match p {
            Program::Builtin { workload, params } if is_dsm(p) => {
                out.extend(comms.iter().map(|&comm| Program::Ranks {
                    app: workload.clone(),
                    comm,
                    params: params.clone(),
                }))
            }
            _ => out.push(p.clone()),
        }
    }
    if out.iter().any(|p| matches!(p, Program::Ranks { .. })) && spec.spawn == Spawn::Fork {
        return Err(PlanError::DsmSpawn);
    }
    Ok(out)
}

/// The one architecture of a reference server, planned as `event`.
fn reference(server: ServerKind) -> Option<&'static str> {
    match server {
        ServerKind::Nginx => Some("N worker processes each running an event loop"),
        ServerKind::Ngircd => Some("one process, one thread, one event loop"),
        ServerKind::Web | ServerKind::Chat => None,
    }
}

/// Refuse a model the program does not run in: event, staged and thread2
/// are servers' only; the web server has four (process, thread, event,
/// staged), the chat server three (thread2, thread, event), nginx and
/// ngircd one (`event`).
fn check_models(program: &Program, models: &[Model]) -> Result<(), PlanError> {
    match program {
        Program::Server { server, .. } if server.is_reference() => {
            if models.contains(&Model::Event) {
                Ok(())
            } else {
                Err(PlanError::ReferenceModel {
                    server: *server,
                    what: reference(*server).unwrap_or_default(),
                })
            }
        }
        Program::Server {
            server: ServerKind::Chat,
            ..
        } => match models
            .iter()
            .find(|m| !matches!(m, Model::Thread2 | Model::Thread | Model::Event))
        {
            Some(&model) => Err(PlanError::ChatModel { model }),
            None => Ok(()),
        },
        Program::Server { .. } => match models
            .iter()
            .find(|m| matches!(m, Model::Hybrid { .. } | Model::Thread2))
        {
            Some(&model) => Err(PlanError::WebModel { model }),
            None => Ok(()),
        },
        // Each rank is a process with its own copy of the shared region:
        // that is what a software DSM is for.
        Program::Ranks { .. } => match models.iter().find(|m| **m != Model::Process) {
            Some(&model) => Err(PlanError::DsmModel { model }),
            None => Ok(()),
        },
        _ => match models.iter().find(|m| m.server_only()) {
            Some(&model) => Err(PlanError::ServerOnlyModel {
                model,
                program: program.label(),
            }),
            None => Ok(()),
        },
    }
}

/// Refuse a sweep whose points would hold more than
/// [`MAX_PLANNED_WORKERS`] CPU numbers, counted before any is allocated.
fn check_size(spec: &RunSpec, programs: usize) -> Result<(), PlanError> {
    let swept: u128 = spec.threads.iter().map(|&n| n as u128).sum();
    let per_placement: u128 = spec
        .models
        .iter()
        .map(|m| match *m {
            Model::Hybrid { processes, threads } => processes as u128 * threads as u128,
            _ => swept,
        })
        .sum();
    let per_placement_points: u128 = spec
        .models
        .iter()
        .map(|m| match m {
            Model::Hybrid { .. } => 1,
            _ => spec.threads.len() as u128,
        })
        .sum();
    let copies = programs as u128 * spec.allocs.len() as u128 * spec.placements.len() as u128;
    let workers = per_placement * copies;
    if workers > MAX_PLANNED_WORKERS {
        return Err(PlanError::TooLarge {
            points: per_placement_points * copies,
            workers,
        });
    }
    Ok(())
}

/// The mode a program runs in: the one asked for, else the workload's
/// default; a user command runs to completion (one unit of work).
fn mode_of(program: &Program, spec: &RunSpec) -> Result<Mode, PlanError> {
    if let Program::Server { .. } = program {
        return match spec.mode {
            None => Ok(Mode::FixedTime {
                seconds: DEFAULT_SERVER_WINDOW_S,
            }),
            Some(Mode::FixedWork { .. }) => Err(PlanError::ServerWork),
            Some(m) => Ok(m),
        };
    }
    // One problem per sample; the metric is its parallel section's time.
    if let Program::Ranks { .. } = program {
        return match spec.mode {
            None => Ok(Mode::FixedWork { work: 1 }),
            Some(Mode::FixedWork { .. }) => Err(PlanError::DsmMode { flag: "--work" }),
            Some(Mode::FixedTime { .. }) => Err(PlanError::DsmMode { flag: "--duration" }),
        };
    }
    let Program::Builtin { workload, .. } = program else {
        return Ok(Mode::FixedWork { work: 1 });
    };
    let info = smtlab_workloads::builtin(workload)
        .ok_or_else(|| PlanError::NoSuchWorkload(workload.clone()))?
        .info();
    match spec.mode {
        None => Ok(info.default_mode),
        Some(Mode::FixedTime { .. }) if !info.fixed_time => Err(PlanError::FixedProblem {
            workload: workload.clone(),
            default_work: match info.default_mode {
                Mode::FixedWork { work } => work,
                Mode::FixedTime { .. } => 1,
            },
        }),
        Some(m) => Ok(m),
    }
}

fn metric_of(program: &Program, spec: &RunSpec, mode: Mode) -> Metric {
    match (program, &spec.metric) {
        (Program::Command { .. }, Some(m)) => Metric {
            name: m.name.clone(),
            unit: m.unit.clone(),
            higher_is_better: m.higher_is_better,
        },
        _ => program_metric(program, mode),
    }
}

/// The metric a program reports in `mode` without `--metric`: a fixed-time
/// built-in its workload's throughput or latency, anything else its wall
/// time (a co-run reports its first part's rate).
pub fn program_metric(program: &Program, mode: Mode) -> Metric {
    match (program, mode) {
        (Program::Builtin { workload, .. }, Mode::FixedTime { .. }) => {
            match smtlab_workloads::builtin(workload).map(|w| w.info().time_metric) {
                Some(TimeMetric::Latency { name, unit, .. }) => Metric {
                    name: name.into(),
                    unit: unit.into(),
                    higher_is_better: false,
                },
                Some(TimeMetric::Throughput { name, unit, .. }) => Metric {
                    name: name.into(),
                    unit: unit.into(),
                    higher_is_better: true,
                },
                None => Metric {
                    name: "throughput".into(),
                    unit: "ops/s".into(),
                    higher_is_better: true,
                },
            }
        }
        // VolanoMark's score: messages delivered (to each member) per second.
        (Program::Server { server, .. }, _) if server.is_chat() => Metric {
            name: "messages".into(),
            unit: "msg/s".into(),
            higher_is_better: true,
        },
        (Program::Server { .. }, _) => Metric {
            name: "requests".into(),
            unit: "req/s".into(),
            higher_is_better: true,
        },
        (Program::CoRun { .. }, _) => Metric {
            name: "rate".into(),
            unit: "1/s".into(),
            higher_is_better: true,
        },
        _ => Metric {
            name: "wall_time".into(),
            unit: "s".into(),
            higher_is_better: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_types::PolicySpec;

    fn spec(threads: Vec<usize>, models: Vec<Model>) -> RunSpec {
        RunSpec {
            programs: vec![Program::Builtin {
                workload: "spin".into(),
                params: Default::default(),
            }],
            comms: Vec::new(),
            models,
            placements: vec!["compact".parse::<PolicySpec>().unwrap()],
            threads,
            allocs: vec!["glibc".into()],
            spawn: Spawn::Exec,
            mode: None,
            metric: None,
            warmup: 1,
            min_samples: 1,
            max_samples: 1,
            precision: 0.02,
            max_time_s: 1.0,
            timeout_s: None,
            seed: 1,
            counters: false,
            study: None,
        }
    }

    #[test]
    fn a_sweep_too_large_to_plan_is_refused_before_it_is_built() {
        let topo = smtlab_topology::synthetic::parse("core:2 pu:1").unwrap();
        // 1-65535: 2,147,450,880 CPU numbers (8 GB) if it were built.
        let all: Vec<usize> = (1..=65_535).collect();
        let e = expand(&topo, &spec(all, vec![Model::Thread])).unwrap_err();
        assert_eq!(
            e,
            PlanError::TooLarge {
                points: 65_535,
                workers: 2_147_450_880
            }
        );
        assert!(e.to_string().contains("at most 10000000"), "{e}");
        // Hybrid shapes count P x T once per placement.
        let hybrid = Model::Hybrid {
            processes: 65_535,
            threads: 1,
        };
        let ok = expand(&topo, &spec(vec![1], vec![hybrid])).unwrap();
        assert_eq!(ok[0].workers, 65_535);
        // A big but sane sweep still plans.
        let ladder: Vec<usize> = (1..=1024).collect();
        assert_eq!(
            expand(&topo, &spec(ladder, vec![Model::Thread]))
                .unwrap()
                .len(),
            1024
        );
    }

    fn server(name: &str) -> Program {
        Program::Server {
            server: ServerKind::from_name(name).unwrap(),
            params: Default::default(),
            client_cpus: None,
        }
    }

    #[test]
    fn servers_get_their_models_and_a_window() {
        let topo = smtlab_topology::synthetic::parse("core:4 pu:1").unwrap();
        let all = vec![Model::Process, Model::Thread, Model::Event, Model::Staged];
        let mut s = spec(vec![1, 2], all.clone());
        s.programs = vec![server("web"), server("nginx")];
        let points = expand(&topo, &s).unwrap();
        // web: 4 models x 2 counts; nginx once per count, as `event`.
        assert_eq!(points.len(), 10);
        let nginx: Vec<&Point> = points
            .iter()
            .filter(|p| p.program.label() == "nginx")
            .collect();
        assert_eq!(nginx.len(), 2);
        assert!(nginx.iter().all(|p| p.model == Model::Event));
        for p in &points {
            assert_eq!(
                p.mode,
                Mode::FixedTime {
                    seconds: DEFAULT_SERVER_WINDOW_S
                }
            );
            assert_eq!(p.metric.unit, "req/s");
            assert_eq!(p.cpus.as_ref().unwrap().len(), p.workers);
        }
        // --duration is the window; --work means nothing to a server.
        s.mode = Some(Mode::FixedTime { seconds: 3.0 });
        assert_eq!(
            expand(&topo, &s).unwrap()[0].mode,
            Mode::FixedTime { seconds: 3.0 }
        );
        s.mode = Some(Mode::FixedWork { work: 5 });
        assert_eq!(expand(&topo, &s).unwrap_err(), PlanError::ServerWork);
    }

    #[test]
    fn a_model_a_program_does_not_have_is_refused() {
        let topo = smtlab_topology::synthetic::parse("core:4 pu:1").unwrap();
        let e = expand(&topo, &spec(vec![1], vec![Model::Event])).unwrap_err();
        assert!(
            e.to_string().starts_with("--model event: only servers"),
            "{e}"
        );
        let mut s = spec(vec![1], vec![Model::Process]);
        s.programs = vec![server("nginx")];
        let e = expand(&topo, &s).unwrap_err();
        assert!(e.to_string().contains("nginx has one architecture"), "{e}");
        s.programs = vec![server("ngircd")];
        let e = expand(&topo, &s).unwrap_err();
        assert!(e.to_string().contains("ngircd has one architecture"), "{e}");
        s.programs = vec![server("web")];
        s.models = vec![Model::Hybrid {
            processes: 2,
            threads: 2,
        }];
        let e = expand(&topo, &s).unwrap_err();
        assert!(e.to_string().starts_with("--model hybrid:2x2"), "{e}");
        s.models = vec![Model::Thread2];
        let e = expand(&topo, &s).unwrap_err();
        assert!(
            e.to_string().starts_with("--model thread2: the web server"),
            "{e}"
        );
        // The chat server: thread2, thread, event; not process or staged.
        s.programs = vec![server("chat")];
        s.models = vec![Model::Thread2, Model::Thread, Model::Event];
        assert_eq!(expand(&topo, &s).unwrap().len(), 3);
        for m in [Model::Process, Model::Staged] {
            s.models = vec![Model::Event, m];
            let e = expand(&topo, &s).unwrap_err();
            assert_eq!(e, PlanError::ChatModel { model: m });
        }
        // ngircd is planned once per count, as event.
        s.programs = vec![server("chat"), server("ngircd")];
        s.models = vec![Model::Thread2, Model::Event];
        let points = expand(&topo, &s).unwrap();
        let ngircd: Vec<_> = points
            .iter()
            .filter(|p| p.program.label() == "ngircd")
            .collect();
        assert_eq!(ngircd.len(), 1);
        assert_eq!(ngircd[0].model, Model::Event);
        // thread2 is a server model.
        s.programs = vec![Program::Builtin {
            workload: "spin".into(),
            params: Default::default(),
        }];
        s.models = vec![Model::Thread2];
        let e = expand(&topo, &s).unwrap_err();
        assert!(
            e.to_string().starts_with("--model thread2: only servers"),
            "{e}"
        );
    }

    fn dsm(app: &str, params: &[(&str, &str)], comms: Vec<Comm>, threads: Vec<usize>) -> RunSpec {
        let mut s = spec(threads, vec![Model::Process]);
        s.programs = vec![Program::Builtin {
            workload: app.into(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }];
        s.comms = comms;
        s
    }

    #[test]
    fn a_dsm_application_is_one_program_per_mechanism_with_n_ranks() {
        let topo = smtlab_topology::synthetic::parse("core:2 pu:1").unwrap();
        let points = expand(&topo, &dsm("sor", &[], Comm::ALL.to_vec(), vec![2, 4])).unwrap();
        let labels: Vec<String> = points.iter().map(|p| p.program.label()).collect();
        assert_eq!(
            labels,
            [
                "sor sigio",
                "sor sigio",
                "sor thr1",
                "sor thr1",
                "sor thr2",
                "sor thr2",
                "sor thr3",
                "sor thr3",
                "sor poll",
                "sor poll"
            ]
        );
        for p in &points {
            assert_eq!(p.model, Model::Process);
            assert_eq!(p.mode, Mode::FixedWork { work: 1 });
            assert_eq!(
                (p.metric.name.as_str(), p.metric.unit.as_str()),
                ("wall_time", "s")
            );
            assert!(!p.metric.higher_is_better);
            // More ranks than CPUs share them, as threads would.
            assert_eq!(p.cpus.as_ref().unwrap().len(), p.workers);
            assert_eq!(p.oversubscription, p.workers as f64 / 2.0);
        }
        // Without --comm: sigio.
        let points = expand(&topo, &dsm("lu", &[], vec![], vec![2])).unwrap();
        assert_eq!(points.len(), 1);
        assert_eq!(
            points[0].program,
            Program::Ranks {
                app: "lu".into(),
                comm: Comm::Sigio,
                params: Default::default()
            }
        );
        // Beside another workload, only the DSM application has ranks.
        let mut s = dsm("tsp", &[], vec![Comm::Thr2, Comm::Poll], vec![2]);
        s.programs.push(Program::Builtin {
            workload: "spin".into(),
            params: Default::default(),
        });
        let labels: Vec<String> = expand(&topo, &s)
            .unwrap()
            .iter()
            .map(|p| p.program.label())
            .collect();
        assert_eq!(labels, ["tsp thr2", "tsp poll", "spin"]);
    }

    #[test]
    fn a_mechanism_given_twice_is_planned_once_in_the_order_given() {
        let topo = smtlab_topology::synthetic::parse("core:2 pu:1").unwrap();
        let s = dsm(
            "sor",
            &[],
            vec![Comm::Thr2, Comm::Poll, Comm::Thr2, Comm::Poll, Comm::Sigio],
            vec![2],
        );
        let labels: Vec<String> = expand(&topo, &s)
            .unwrap()
            .iter()
            .map(|p| p.program.label())
            .collect();
        assert_eq!(labels, ["sor thr2", "sor poll", "sor sigio"]);
    }

    #[test]
    fn dsm_mistakes_are_refused_naming_the_flag() {
        let topo = smtlab_topology::synthetic::parse("core:2 pu:1").unwrap();
        let mut s = spec(vec![2], vec![Model::Process]);
        s.comms = vec![Comm::Thr2];
        let e = expand(&topo, &s).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--comm: only the DSM applications (sor, lu, tsp) take a mechanism"
        );
        let mut s = dsm("sor", &[], vec![Comm::Thr2], vec![2]);
        s.models = vec![Model::Process, Model::Thread];
        let e = expand(&topo, &s).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "--model thread: the DSM applications (sor, lu, tsp) run as processes"
            ),
            "{e}"
        );
        let e = crate::plan::plan(&topo, &dsm("sor", &[], vec![], vec![1])).unwrap_err();
        assert!(e.to_string().starts_with("--threads 1: "), "{e}");
        // The parameters and each rank count, when the plan's programs are
        // typed (`program_params`).
        let plan = |s: &RunSpec| crate::plan::plan(&topo, s).unwrap_err();
        let e = plan(&dsm("sor", &[("loss", "2")], vec![], vec![2]));
        assert!(e.to_string().starts_with("--param loss=2: "), "{e}");
        let e = plan(&dsm("sor", &[("per_node", "3")], vec![], vec![2]));
        assert!(e.to_string().starts_with("--param per_node=3: "), "{e}");
        let e = plan(&dsm("sor", &[("per_node", "2")], vec![], vec![2, 3]));
        assert!(e.to_string().starts_with("--threads 3: "), "{e}");
        let mut s = dsm("sor", &[], vec![], vec![2]);
        s.mode = Some(Mode::FixedWork { work: 3 });
        assert_eq!(
            expand(&topo, &s).unwrap_err(),
            PlanError::DsmMode { flag: "--work" }
        );
        s.mode = None;
        s.spawn = Spawn::Fork;
        assert_eq!(expand(&topo, &s).unwrap_err(), PlanError::DsmSpawn);
        for e in [
            PlanError::DsmModel {
                model: Model::Thread,
            },
            PlanError::DsmMode { flag: "--duration" },
            PlanError::DsmSpawn,
        ] {
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }
}
