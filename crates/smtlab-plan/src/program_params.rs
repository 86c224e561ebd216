//! `program_params`: every program of a plan with its parameters parsed
//! and checked once, into the types its product takes ([`ProgramParams`]:
//! a web server's `WebParams`, a chat server's `ChatParams`, a DSM
//! application's `DsmPointParams`, a built-in workload's
//! `WorkloadConfig`), and each DSM point's rank count against its
//! parameters. This is the one place a point's `--param`s are checked;
//! the samples run with [`TypedPrograms`] as they are. Uses `expand` (for
//! [`PlanError`]).

use smtlab_chat::params::ChatParams;
use smtlab_dsm_params::{DsmPointParams, RanksFrom};
use smtlab_types::{Point, Program};
use smtlab_web::params::WebParams;
use smtlab_workloads::{self as workloads, WorkloadConfig, WorkloadError};

use crate::expand::PlanError;

/// A program's parameters in the types its product takes.
#[derive(Debug, Clone, PartialEq)]
pub enum ProgramParams {
    /// A built-in workload's, parsed by it (names, types, ranges, its
    /// defaults filled in). Its workers, processes of their own, are
    /// handed this and set up from it.
    Builtin(WorkloadConfig),
    /// A web server's (`-w web`, `nginx`).
    Web(WebParams),
    /// A chat server's (`-w chat`, `ngircd`).
    Chat(ChatParams),
    /// A DSM application's and the DSM's (`-w sor`, `lu`, `tsp`).
    Dsm(DsmPointParams),
    /// Each part's of a co-run, in the order of its parts.
    CoRun(Vec<ProgramParams>),
    /// A user command has none.
    Command,
}

impl ProgramParams {
    /// Parse and check `program`'s parameters; the error names the
    /// parameter and what would be valid (the CLI prints it as one line).
    pub fn parse(program: &Program) -> Result<ProgramParams, PlanError> {
        Ok(match program {
            Program::Builtin { workload, params } => {
                ProgramParams::Builtin(builtin(workload, params)?)
            }
            Program::Server {
                server,
                params,
                client_cpus,
            } if server.is_chat() => {
                ProgramParams::Chat(ChatParams::parse(*server, params, client_cpus.as_ref())?)
            }
            Program::Server {
                server,
                params,
                client_cpus,
            } => ProgramParams::Web(WebParams::parse(*server, params, client_cpus.as_ref())?),
            Program::Ranks { app, params, .. } => ProgramParams::Dsm(
                DsmPointParams::parse(app, params)
                    .map_err(|e| PlanError::DsmParams(e.to_string()))?,
            ),
            Program::CoRun { parts } => ProgramParams::CoRun(
                parts
                    .iter()
                    .map(|part| ProgramParams::parse(&part.program))
                    .collect::<Result<_, _>>()?,
            ),
            Program::Command { .. } => ProgramParams::Command,
        })
    }
}

/// A built-in workload's parameters parsed by it: names and types, then
/// ranges (a value out of range would otherwise fail every sample of the
/// run, one by one), its defaults filled in.
fn builtin(workload: &str, params: &workloads::Params) -> Result<WorkloadConfig, PlanError> {
    let wl = workloads::builtin(workload)
        .ok_or_else(|| PlanError::NoSuchWorkload(workload.to_string()))?;
    wl.parse(params).map_err(|error| match error {
        WorkloadError::Params(e) => PlanError::WorkloadParam(e),
        error => PlanError::WorkloadCheck {
            workload: workload.to_string(),
            error,
        },
    })
}

/// Every program of a plan with its parameters parsed and checked, each
/// program once however many points it has.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TypedPrograms(Vec<(Program, ProgramParams)>);

impl TypedPrograms {
    /// Parse and check the parameters of every program of `points` (the
    /// first of its points gives each program its turn, so the first
    /// mistake reported is the first of the plan), and each DSM point's
    /// rank count against its program's parameters.
    pub fn of(points: &[Point]) -> Result<TypedPrograms, PlanError> {
        let mut typed = TypedPrograms::default();
        for point in points {
            let at = match typed.0.iter().position(|(p, _)| *p == point.program) {
                Some(at) => at,
                None => {
                    let p = ProgramParams::parse(&point.program)?;
                    typed.0.push((point.program.clone(), p));
                    typed.0.len() - 1
                }
            };
            // A DSM point's N is its ranks, which its parameters must fit
            // (per_node=2: whole nodes).
            if let ProgramParams::Dsm(dsm) = &typed.0[at].1 {
                dsm.check_ranks(point.workers, RanksFrom::Threads)
                    .map_err(|e| PlanError::DsmParams(e.to_string()))?;
            }
        }
        Ok(typed)
    }

    /// Add the programs of `other` (another part of one plan) that are
    /// not here yet.
    pub fn extend(&mut self, other: TypedPrograms) {
        for (program, params) in other.0 {
            if self.get(&program).is_none() {
                self.0.push((program, params));
            }
        }
    }

    /// The parameters of `program`, a program of the plan.
    pub fn get(&self, program: &Program) -> Option<&ProgramParams> {
        self.0.iter().find(|(p, _)| p == program).map(|(_, t)| t)
    }

    /// How many distinct programs the plan has.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use smtlab_types::{CpuSet, Metric, Mode, Model, ServerKind, Spawn};

    use super::*;

    fn point(index: usize, program: Program, workers: usize) -> Point {
        Point {
            index,
            program,
            model: Model::Process,
            spawn: Spawn::Exec,
            placement: "compact".into(),
            workers,
            cpus: None,
            oversubscription: 1.0,
            alloc: "glibc".into(),
            mode: Mode::FixedWork { work: 1 },
            metric: Metric {
                name: "wall_time".into(),
                unit: "s".into(),
                higher_is_better: false,
            },
        }
    }

    fn kv(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn web(params: &[(&str, &str)], client_cpus: Option<CpuSet>) -> Program {
        Program::Server {
            server: ServerKind::Web,
            params: kv(params),
            client_cpus,
        }
    }

    /// Every program is parsed once however many points it has, into its
    /// product's type, `--client-cpus` the set given.
    #[test]
    fn each_program_is_parsed_once_into_its_products_type() {
        let cpus = CpuSet::parse_list("1").unwrap();
        let server = web(&[("connections", "8")], Some(cpus.clone()));
        let sor = Program::Ranks {
            app: "sor".into(),
            comm: smtlab_types::Comm::Thr2,
            params: kv(&[("per_node", "2")]),
        };
        let points: Vec<Point> = (0..6)
            .map(|i| match i % 2 {
                0 => point(i, server.clone(), 1 + i),
                _ => point(i, sor.clone(), 2 * i),
            })
            .collect();
        let typed = TypedPrograms::of(&points).unwrap();
        assert_eq!(typed.len(), 2);
        let Some(ProgramParams::Web(p)) = typed.get(&server) else {
            panic!("{typed:?}");
        };
        assert_eq!(
            (p.connections, p.client_cpus.as_ref()),
            (Some(8), Some(&cpus))
        );
        let Some(ProgramParams::Dsm(d)) = typed.get(&sor) else {
            panic!("{typed:?}");
        };
        assert_eq!(d.dsm.per_node, 2);
    }

    /// The one place a point's parameters are refused: the messages the
    /// command line printed before planning checked them, word for word.
    #[test]
    fn a_parameter_is_refused_when_planned_with_the_words_it_always_had() {
        let refused = |program: Program, workers: usize| {
            TypedPrograms::of(&[point(0, program, workers)])
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused(web(&[("connections", "0")], None), 1),
            "--param connections=0: expected 1 to 100000"
        );
        let chat = Program::Server {
            server: ServerKind::Chat,
            params: kv(&[("connections", "30")]),
            client_cpus: None,
        };
        assert_eq!(
            refused(chat, 1),
            "--param connections=30: expected a multiple of room=20 (rooms of 20 users)"
        );
        let spin = |params: &[(&str, &str)]| Program::Builtin {
            workload: "spin".into(),
            params: kv(params),
        };
        let e = refused(spin(&[("bogus", "1")]), 1);
        assert!(
            e.starts_with("--param bogus: workload `spin` has no parameter `bogus`"),
            "{e}"
        );
        let sor = Program::Ranks {
            app: "sor".into(),
            comm: smtlab_types::Comm::Sigio,
            params: kv(&[("per_node", "2")]),
        };
        assert!(refused(sor, 3).starts_with("--threads 3: with per_node=2"));
        // A co-run's parts are its built-ins, each checked.
        let co = Program::CoRun {
            parts: vec![smtlab_types::CoPart {
                name: "spin".into(),
                slot: 0,
                program: Box::new(spin(&[("bogus", "1")])),
                mode: Mode::FixedWork { work: 1 },
            }],
        };
        assert!(refused(co, 1).starts_with("--param bogus: "));
    }

    /// A built-in program is parsed once, when planned, into the config
    /// its workers set up from, however many points (and co-run parts)
    /// name it; a value out of range is refused there with the words it
    /// always had.
    #[test]
    fn a_builtin_is_parsed_once_when_planned() {
        let builtin = |workload: &str, params: &[(&str, &str)]| Program::Builtin {
            workload: workload.into(),
            params: kv(params),
        };
        let parfib = builtin("parfib", &[("n", "20")]);
        let spin = builtin("spin", &[]);
        let co = Program::CoRun {
            parts: [&spin, &parfib]
                .iter()
                .enumerate()
                .map(|(slot, p)| smtlab_types::CoPart {
                    name: format!("p{slot}"),
                    slot,
                    program: Box::new((*p).clone()),
                    mode: Mode::FixedWork { work: 1 },
                })
                .collect(),
        };
        let points: Vec<Point> = (0..9)
            .map(|i| point(i, [&parfib, &spin, &co][i % 3].clone(), 1 + i))
            .collect();
        let typed = TypedPrograms::of(&points).unwrap();
        assert_eq!(typed.len(), 3, "one entry per distinct program");
        let config = |workload: &str, given: &[(&str, &str)]| {
            workloads::builtin(workload)
                .unwrap()
                .parse(&kv(given))
                .unwrap()
        };
        assert_eq!(
            typed.get(&parfib),
            Some(&ProgramParams::Builtin(config("parfib", &[("n", "20")])))
        );
        assert_eq!(
            typed.get(&spin),
            Some(&ProgramParams::Builtin(config("spin", &[])))
        );
        assert_eq!(
            typed.get(&co),
            Some(&ProgramParams::CoRun(vec![
                ProgramParams::Builtin(config("spin", &[])),
                ProgramParams::Builtin(config("parfib", &[("n", "20")])),
            ]))
        );
        let refused = |program: Program| {
            TypedPrograms::of(&[point(0, program, 1)])
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            refused(builtin("parfib", &[("n", "91")])),
            "--param n=91: at most 90 (nfib must fit in 64 bits) (workload `parfib`)"
        );
        assert_eq!(
            refused(builtin("spin", &[("seed", "x")])),
            "--param seed=x: workload `spin` expects a non-negative integer here (default 1)"
        );
    }
}
