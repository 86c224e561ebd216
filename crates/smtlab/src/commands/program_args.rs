//! `-w NAME | --cmd TEMPLATE` with its parameters and metric, and
//! `--duration | --work`: what a command measures and for how long. Shared
//! by `run` and `study`, which measure the same kinds of program.

use std::collections::BTreeMap;

use clap::Args;
use smtlab_types::{CpuSet, MetricSpec, Mode, Program};

use crate::exit::usage;
use crate::flags::{self, Better, MetricArg, WorkloadName};

#[derive(Args, Debug, Clone)]
pub struct ProgramArgs {
    /// Built-in workload(s), comma-separated (see `smtlab list`; `study`
    /// defaults to its own)
    #[arg(
        short = 'w',
        long,
        value_name = "NAME",
        value_delimiter = ',',
        value_parser = flags::workload
    )]
    pub workload: Vec<WorkloadName>,
    /// Servers (-w web, -w nginx): the CPUs of the load generator, a CPU
    /// list (default: the CPUs the server does not use)
    #[arg(long, value_name = "LIST", value_parser = flags::client_cpus)]
    pub client_cpus: Option<CpuSet>,
    /// A workload parameter, KEY=VALUE (repeatable; applies to every -w)
    #[arg(long = "param", value_name = "K=V", value_parser = flags::param)]
    pub params: Vec<(String, String)>,
    /// Run this command instead of a built-in workload; placeholders:
    /// {threads} (threads of this process; short form: n in braces),
    /// {rank}, {cpus} (its CPU list). `study pairs` takes several, each
    /// named: --cmd NAME='TEMPLATE'
    #[arg(long, value_name = "TEMPLATE", value_parser = flags::cmd_template)]
    pub cmd: Vec<String>,
    /// Read the metric from a command's output: NAME=REGEX (first capture
    /// group, last match; summed over processes)
    #[arg(long, value_name = "NAME=REGEX", value_parser = flags::metric)]
    pub metric: Option<MetricArg>,
    /// Unit of --metric, for tables
    #[arg(long, value_name = "UNIT", default_value = "", requires = "metric")]
    pub metric_unit: String,
    /// Whether a larger --metric is better (throughput) or worse (time);
    /// with `lower` the slowest process counts instead of the sum
    #[arg(
        long,
        value_name = "higher|lower",
        default_value = "higher",
        requires = "metric",
        value_parser = flags::metric_better()
    )]
    pub metric_better: Better,
}

/// The `--param`s as a map, each key given once: a second value would
/// silently replace the first, and only the one kept would be checked.
pub fn param_map(params: &[(String, String)]) -> anyhow::Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for (k, v) in params {
        if let Some(first) = map.insert(k.clone(), v.clone()) {
            return Err(usage(format!(
                "--param {k} given twice ({k}={first}, {k}={v}): give each parameter once"
            )));
        }
    }
    Ok(map)
}

impl ProgramArgs {
    /// The programs to measure and the metric of a `--cmd`, checked
    /// together: no flag that would be silently ignored. Each program's
    /// parameters are checked against it when the run is planned
    /// (`smtlab_plan::TypedPrograms`: names, types and ranges, before
    /// anything runs). With `allow_none` (studies), giving neither -w nor
    /// --cmd leaves the programs to the study.
    pub fn programs(&self, allow_none: bool) -> anyhow::Result<(Vec<Program>, Option<MetricSpec>)> {
        if !self.workload.is_empty() && !self.cmd.is_empty() {
            return Err(usage(
                "the argument '--workload <NAME>' cannot be used with '--cmd <TEMPLATE>' (only \
                 `study pairs` measures both)",
            ));
        }
        if self.cmd.len() > 1 {
            return Err(usage(format!(
                "--cmd given {} times: one command is measured (only `study pairs` takes \
                 several, as --cmd NAME='TEMPLATE')",
                self.cmd.len()
            )));
        }
        let params = param_map(&self.params)?;
        if let Some(c) = &self.client_cpus {
            if !self
                .workload
                .iter()
                .any(|w| matches!(w, WorkloadName::Server(_)))
            {
                return Err(usage(format!(
                    "--client-cpus {c}: the load generator's CPUs apply to servers (-w web, nginx, \
                     chat, ngircd)"
                )));
            }
        }
        let programs = match (self.workload.is_empty(), self.cmd.first()) {
            (false, None) if self.metric.is_some() => {
                return Err(usage(
                    "--metric applies to --cmd; a built-in workload reports its own metric \
                     (see `smtlab list`)",
                ))
            }
            (false, None) => self
                .workload
                .iter()
                .map(|w| match w {
                    WorkloadName::Server(server) => Program::Server {
                        server: *server,
                        params: params.clone(),
                        client_cpus: self.client_cpus.clone(),
                    },
                    // A DSM application is a program of planning's, which
                    // makes ranks of it.
                    WorkloadName::Builtin(name) | WorkloadName::Dsm(name) => Program::Builtin {
                        workload: name.clone(),
                        params: params.clone(),
                    },
                })
                .collect(),
            (true, Some(c)) => {
                if !self.params.is_empty() {
                    return Err(usage(
                        "--param applies to built-in workloads; put a command's arguments in \
                         --cmd",
                    ));
                }
                if c.trim().is_empty() {
                    return Err(usage("--cmd: empty command"));
                }
                vec![Program::Command {
                    template: c.clone(),
                }]
            }
            (true, None) if allow_none => {
                if let Some((k, v)) = self.params.first() {
                    return Err(usage(format!(
                        "--param {k}={v}: parameters apply to the workloads named with -w; the \
                         study's own workloads run with their defaults"
                    )));
                }
                Vec::new()
            }
            _ => {
                return Err(usage(
                    "nothing to run: give -w WORKLOAD (see `smtlab list`) or --cmd 'COMMAND'",
                ))
            }
        };
        let metric = self.metric.as_ref().map(|m| MetricSpec {
            name: m.name.clone(),
            regex: m.regex.clone(),
            unit: self.metric_unit.clone(),
            higher_is_better: self.metric_better == Better::Higher,
        });
        Ok((programs, metric))
    }

    /// The programs of `study pairs`, each with its name: the workloads
    /// (named by the workload, parameters checked as for `programs`) and
    /// the commands, each given as `NAME=TEMPLATE`.
    pub fn pair_programs(&self) -> anyhow::Result<Vec<(String, Program)>> {
        if self.metric.is_some() {
            return Err(usage(
                "--metric: study pairs compares rates: a command's rate is 1 / its wall time",
            ));
        }
        let mut out = Vec::new();
        if !self.workload.is_empty() {
            let only = ProgramArgs {
                cmd: Vec::new(),
                ..self.clone()
            };
            let (programs, _) = only.programs(false)?;
            for (w, p) in self.workload.iter().zip(programs) {
                out.push((w.to_string(), p));
            }
        } else if !self.params.is_empty() {
            return Err(usage("--param applies to the workloads named with -w"));
        }
        for c in &self.cmd {
            let named = c.split_once('=').filter(|(name, _)| {
                !name.is_empty()
                    && name
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || "_.-".contains(ch))
            });
            let Some((name, template)) = named else {
                return Err(usage(format!(
                    "--cmd {c}: study pairs names each command: --cmd NAME='TEMPLATE' (NAME of \
                     letters, digits, _ . -)"
                )));
            };
            if template.trim().is_empty() {
                return Err(usage(format!("--cmd {name}=: empty command")));
            }
            out.push((
                name.to_string(),
                Program::Command {
                    template: template.to_string(),
                },
            ));
        }
        Ok(out)
    }

    /// `--duration`/`--work` as a mode; `None` leaves each workload its
    /// own. A `--cmd` runs to completion, so neither applies to it.
    pub fn mode(&self, duration_s: Option<f64>, work: Option<u64>) -> anyhow::Result<Option<Mode>> {
        let is_cmd = !self.cmd.is_empty();
        match (duration_s, work) {
            (None, None) => Ok(None),
            (None, Some(work)) if !is_cmd => Ok(Some(Mode::FixedWork { work })),
            (Some(seconds), None) if !is_cmd => Ok(Some(Mode::FixedTime { seconds })),
            _ => Err(usage(
                "--duration and --work apply to built-in workloads; a --cmd runs to completion",
            )),
        }
    }
}
