//! `smtlab place`: which CPUs a placement or CPU expression gives N workers,
//! on this machine or on one described by `--fsroot` / `--synthetic`.

use std::fmt::Write;

use clap::Args;
use serde::Serialize;
use smtlab_topology::cpu_expr::{self, AffinityDomain};
use smtlab_topology::placement::{self, Placement, Policy};
use smtlab_topology::Topology;

use super::topology_source::TopologySource;
use crate::exit::usage;
use crate::flags;
use crate::output;

#[derive(Args, Debug)]
pub struct PlaceArgs {
    #[command(flatten)]
    pub source: TopologySource,
    /// compact, scatter, core, smt:K, none, or a CPU expression
    /// (0,2-5 · N:0-3 · S1:0-1 · C0:0-3 · M0:0-3 · E:N:8:1:2 · S0:0-1@S1:0-1)
    #[arg(
        short,
        long,
        value_name = "POLICY",
        default_value = "compact",
        value_parser = flags::policy
    )]
    pub placement: Policy,
    /// Number of workers (threads or processes) to place
    #[arg(
        short = 'n',
        long,
        value_name = "N",
        required_unless_present = "domains",
        value_parser = flags::worker_count
    )]
    pub threads: Option<usize>,
    /// List the affinity domains CPU expressions can name, like likwid-pin -p
    #[arg(long)]
    pub domains: bool,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct DomainJson<'a> {
    tag: &'a str,
    pus: &'a [u32],
    logical: &'a [u32],
}

pub fn run(a: PlaceArgs) -> anyhow::Result<i32> {
    let topo = a.source.load()?;
    if a.domains {
        let domains = cpu_expr::domains(&topo);
        let text = if a.json {
            let v: Vec<DomainJson> = domains
                .iter()
                .map(|d| DomainJson {
                    tag: &d.tag,
                    pus: &d.pus,
                    logical: &d.logical,
                })
                .collect();
            serde_json::to_string_pretty(&v)? + "\n"
        } else {
            render_domains(&domains)
        };
        return output::print(&text).map(|_| 0);
    }
    let n = a.threads.expect("clap requires -n unless --domains");
    let placed =
        placement::place(&topo, &a.placement, n).map_err(|e| usage(format!("--placement: {e}")))?;
    let text = if a.json {
        serde_json::to_string_pretty(&placed)? + "\n"
    } else {
        render_placement(&topo, &placed)
    };
    output::print(&text).map(|_| 0)
}

fn render_domains(domains: &[AffinityDomain]) -> String {
    let mut s = String::new();
    for d in domains {
        let list = |v: &[u32]| {
            v.iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        writeln!(s, "Domain {}:", d.tag).unwrap();
        writeln!(s, "  PUs core by core:      {}", list(&d.pus)).unwrap();
        writeln!(s, "  logical (cores first): {}", list(&d.logical)).unwrap();
    }
    s
}

fn render_placement(topo: &Topology, p: &Placement) -> String {
    let mut s = String::new();
    match &p.cpus {
        None => {
            writeln!(
                s,
                "placement none: {} workers, not pinned (the scheduler may use up to {} PUs)",
                p.n, p.distinct_pus
            )
            .unwrap();
        }
        Some(cpus) => {
            writeln!(
                s,
                "placement {}: {} workers on {} PUs (oversubscription {:.2})",
                p.policy, p.n, p.distinct_pus, p.oversubscription
            )
            .unwrap();
            writeln!(
                s,
                "{:>6} {:>5} {:>5} {:>8} {:>5}",
                "worker", "cpu", "core", "package", "numa"
            )
            .unwrap();
            let opt = |v: Option<usize>| v.map_or("-".to_string(), |x| x.to_string());
            for (w, &cpu) in cpus.iter().enumerate() {
                let pu = topo.pu(cpu);
                writeln!(
                    s,
                    "{:>6} {:>5} {:>5} {:>8} {:>5}",
                    w,
                    cpu,
                    opt(pu.and_then(|p| p.core)),
                    opt(pu.and_then(|p| p.package)),
                    opt(pu.and_then(|p| p.numa)),
                )
                .unwrap();
            }
        }
    }
    if let Some(note) = &p.note {
        writeln!(s, "note: {note}").unwrap();
    }
    s
}
