//! The web study's findings: one table of every server point (requests/s
//! with the server's costs per request, the paper's Tables 1–3 side by
//! side) and verdicts: which architecture served the most at each worker
//! count, smtlab's event loop against nginx, the paper's ranking checked,
//! and what an SMT sibling adds against what a second core adds.

use smtlab_analyse::analysis::{verdict, PointData};
use smtlab_analyse::units::table_value;
use smtlab_topology::Topology;
use smtlab_types::{Model, Program, Table};

/// The web study's part of the findings (added to the study's
/// [`Findings`](crate::Findings) by `findings.rs`).
#[derive(Debug, Clone, Default)]
pub struct WebFindings {
    pub tables: Vec<Table>,
    pub verdicts: Vec<String>,
    pub limits: Vec<String>,
}

/// The name of a server point (`web` or `nginx`), `None` for any other.
fn server_of(p: &PointData) -> Option<&str> {
    match &p.summary.point.program {
        Program::Server { server, .. } => Some(server),
        _ => None,
    }
}

/// A row's label: `web process`, `nginx`.
fn label(p: &PointData) -> String {
    match server_of(p) {
        Some("web") => format!("web {}", p.summary.point.model),
        Some(s) => s.to_string(),
        None => p.summary.point.program.label(),
    }
}

fn cpus_text(p: &PointData) -> String {
    p.summary.point.cpus.as_ref().map_or("-".into(), |c| {
        c.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    })
}

fn extra(p: &PointData, key: &str) -> Option<f64> {
    p.summary.extras.get(key).copied()
}

/// A counter's median per sample, user and kernel added, per request.
fn per_request(p: &PointData, name: &str) -> Option<f64> {
    let values: Vec<f64> = p
        .summary
        .counters
        .iter()
        .filter(|c| c.name == name)
        .map(|c| c.median)
        .collect::<Option<Vec<f64>>>()?;
    let ops = p.summary.worker_ops.iter().sum::<f64>();
    let per_sample_ops = extra(p, "requests_answered").unwrap_or(ops);
    (!values.is_empty() && per_sample_ops > 0.0)
        .then(|| values.iter().sum::<f64>() / per_sample_ops)
}

fn cpi(p: &PointData) -> Option<f64> {
    let sum = |name: &str| {
        p.summary
            .counters
            .iter()
            .filter(|c| c.name == name)
            .map(|c| c.median)
            .collect::<Option<Vec<f64>>>()
            .filter(|v| !v.is_empty())
            .map(|v| v.iter().sum::<f64>())
    };
    let (cycles, instructions) = (sum("cycles")?, sum("instructions")?);
    (instructions > 0.0).then(|| cycles / instructions)
}

/// The web study's table, verdicts and limits.
pub fn web(points: &[PointData], topo: &Topology, seed: u64, f: &mut WebFindings) {
    let servers: Vec<&PointData> = points.iter().filter(|p| server_of(p).is_some()).collect();
    if servers.is_empty() {
        return;
    }
    table(&servers, f);
    let mut groups: Vec<(String, usize, String)> = Vec::new();
    for p in &servers {
        let key = (
            p.summary.point.placement.clone(),
            p.summary.point.workers,
            cpus_text(p),
        );
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    for (placement, n, cpus) in &groups {
        let here: Vec<&PointData> = servers
            .iter()
            .copied()
            .filter(|p| {
                p.summary.point.placement == *placement
                    && p.summary.point.workers == *n
                    && cpus_text(p) == *cpus
                    && p.summary.summary.is_some()
            })
            .collect();
        ranking(&here, *n, cpus, seed, f);
    }
    smt_against_cores(&servers, topo, seed, f);
    limits(&servers, f);
}

fn median(p: &PointData) -> Option<f64> {
    p.summary.summary.as_ref().map(|s| s.median)
}

fn table(servers: &[&PointData], f: &mut WebFindings) {
    let num =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    let rows = servers
        .iter()
        .map(|p| {
            let r = &p.summary;
            let note = if r.summary.is_none() {
                "no successful sample".to_string()
            } else if extra(p, "client_bound").is_some_and(|b| b >= 0.5) {
                "client-bound: a lower bound".to_string()
            } else if extra(p, "client_pinned").is_some_and(|b| b < 0.5) {
                "client on the server's CPUs".to_string()
            } else {
                String::new()
            };
            vec![
                label(p),
                r.point.placement.clone(),
                r.point.workers.to_string(),
                cpus_text(p),
                median(p).map_or("failed".into(), |m| table_value(m, &r.point.metric.unit)),
                num(extra(p, "server_user_us_per_req"), 1),
                num(extra(p, "server_sys_us_per_req"), 1),
                num(extra(p, "voluntary_cs_per_req"), 3),
                num(extra(p, "involuntary_cs_per_req"), 3),
                num(per_request(p, "L1-icache-load-misses"), 1),
                num(per_request(p, "L1-dcache-load-misses"), 1),
                num(cpi(p), 2),
                extra(p, "client_cpu_share").map_or("-".into(), |s| format!("{:.0}%", s * 100.0)),
                note,
            ]
        })
        .collect();
    f.tables.push(Table {
        title: "Web servers: requests/s and the server's cost per request".to_string(),
        columns: [
            "server",
            "placement",
            "N",
            "CPUs",
            "requests/s",
            "user µs/req",
            "sys µs/req",
            "vol. cs/req",
            "invol. cs/req",
            "L1-I miss/req",
            "L1-D miss/req",
            "CPI",
            "client CPU",
            "note",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: Some(
            "medians over samples; a sample is one server lifetime under a window of load; CPU \
             µs and context switches are the server's (all its processes and threads, start and \
             stop included) over the requests answered; L1 misses and CPI where a PMU counts \
             them ('-' otherwise); client CPU = how busy the load generator's CPUs were"
                .to_string(),
        ),
    });
}

/// Which architecture served the most at one placement and N, the others
/// as fractions of it; smtlab's event loop against nginx; and the paper's
/// ranking checked where all four architectures were measured.
fn ranking(here: &[&PointData], n: usize, cpus: &str, seed: u64, f: &mut WebFindings) {
    let web: Vec<&PointData> = here
        .iter()
        .copied()
        .filter(|p| server_of(p) == Some("web"))
        .collect();
    let at = format!(
        "{n} worker{} on CPU{} {cpus}",
        plural(n),
        plural(cpus.split(',').count())
    );
    if web.len() >= 2 {
        let best = web
            .iter()
            .copied()
            .max_by(|a, b| median(a).partial_cmp(&median(b)).expect("finite medians"))
            .expect("two or more");
        let mut others = Vec::new();
        for p in web.iter().copied().filter(|p| !std::ptr::eq(*p, best)) {
            if let Some(v) = verdict::compare(p, best, &label(p), &label(best), &at, seed) {
                let ci = v
                    .ci95
                    .map(|(lo, hi)| format!(" [{lo:.2}–{hi:.2}]"))
                    .unwrap_or_default();
                others.push(format!(
                    "{} {:.2}x{ci}",
                    p.summary.point.model, v.speed_ratio
                ));
            }
        }
        f.verdicts.push(format!(
            "With {at}: the {} architecture served the most, {}; the others served {} of that \
             (95% CIs).",
            best.summary.point.model,
            table_value(median(best).unwrap_or(0.0), &best.summary.point.metric.unit),
            others.join(", ")
        ));
        let by = |m: Model| web.iter().copied().find(|p| p.summary.point.model == m);
        if let (Some(event), Some(process), Some(staged)) =
            (by(Model::Event), by(Model::Process), by(Model::Staged))
        {
            if web.len() == 4 {
                let slowest = web
                    .iter()
                    .copied()
                    .min_by(|a, b| median(a).partial_cmp(&median(b)).expect("finite medians"))
                    .expect("four");
                let ratio = median(event).unwrap_or(0.0) / median(process).unwrap_or(1.0);
                let fastest_event = std::ptr::eq(best, event);
                let slowest_staged = std::ptr::eq(slowest, staged);
                f.verdicts.push(format!(
                    "The paper found the event-driven server fastest (Flash 1.5–2.5x Apache) and \
                     the staged one slowest; with {at} here, event served {ratio:.2}x process \
                     (Apache prefork's architecture), {} and {}.",
                    if fastest_event {
                        "event was the fastest".to_string()
                    } else {
                        format!("the fastest was {}", best.summary.point.model)
                    },
                    if slowest_staged {
                        "staged the slowest, as in the paper".to_string()
                    } else {
                        format!("the slowest was {}", slowest.summary.point.model)
                    }
                ));
            }
        }
    }
    let event = here
        .iter()
        .copied()
        .find(|p| server_of(p) == Some("web") && p.summary.point.model == Model::Event);
    let nginx = here.iter().copied().find(|p| server_of(p) == Some("nginx"));
    if let (Some(e), Some(x)) = (event, nginx) {
        if let Some(v) = verdict::compare(e, x, "smtlab's event server", "nginx", &at, seed) {
            f.verdicts.push(v.sentence);
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Per architecture: what two SMT siblings of one core serve against one
/// worker, and what two cores serve, and the first gain as a share of the
/// second (the paper: SMT +12–32% for Apache, a quarter to two fifths of a
/// second processor's gain).
fn smt_against_cores(servers: &[&PointData], topo: &Topology, seed: u64, f: &mut WebFindings) {
    let core_of = |cpu: u32| topo.cores.iter().position(|c| c.cpus.contains(cpu));
    let shares_core = |p: &PointData| {
        p.summary.point.cpus.as_ref().is_some_and(|c| {
            c.len() == 2 && core_of(c[0]).is_some() && core_of(c[0]) == core_of(c[1])
        })
    };
    let two_cores = |p: &PointData| {
        p.summary.point.cpus.as_ref().is_some_and(|c| {
            c.len() == 2
                && core_of(c[0]).is_some()
                && core_of(c[1]).is_some()
                && core_of(c[0]) != core_of(c[1])
        })
    };
    let mut seen: Vec<String> = Vec::new();
    for p in servers {
        let name = label(p);
        if seen.contains(&name) {
            continue;
        }
        seen.push(name.clone());
        let same = |q: &&&PointData| label(q) == name && q.summary.summary.is_some();
        let one = servers
            .iter()
            .filter(same)
            .find(|q| q.summary.point.workers == 1);
        let smt = servers.iter().filter(same).find(|q| shares_core(q));
        let cores = servers.iter().filter(same).find(|q| two_cores(q));
        let (Some(one), Some(smt)) = (one, smt) else {
            continue;
        };
        let Some(v_smt) = verdict::compare(smt, one, "two SMT siblings", "one worker", &name, seed)
        else {
            continue;
        };
        let gain = |r: f64| (r - 1.0) * 100.0;
        let ci = |c: Option<(f64, f64)>| {
            c.map(|(lo, hi)| format!(" (95% CI {:+.1}% to {:+.1}%)", gain(lo), gain(hi)))
                .unwrap_or_default()
        };
        let mut s = format!(
            "{name}: two SMT siblings of one core served {:+.1}%{} against one worker",
            gain(v_smt.speed_ratio),
            ci(v_smt.ci95)
        );
        if let Some(v_core) =
            cores.and_then(|c| verdict::compare(c, one, "two cores", "one worker", &name, seed))
        {
            let share = (v_smt.speed_ratio - 1.0) / (v_core.speed_ratio - 1.0);
            s.push_str(&format!(
                ", two cores {:+.1}%{}",
                gain(v_core.speed_ratio),
                ci(v_core.ci95)
            ));
            if v_core.speed_ratio > 1.0 && share.is_finite() {
                s.push_str(&format!(": SMT gave {share:.2} of a second core's gain"));
            }
        }
        s.push_str(" (the paper: SMT +12–32% for Apache, a quarter to two fifths of a second processor's gain).");
        f.verdicts.push(s);
    }
}

/// What this run could not show: client-bound points, counters missing.
fn limits(servers: &[&PointData], f: &mut WebFindings) {
    let bound: Vec<String> = servers
        .iter()
        .filter(|p| extra(p, "client_bound").is_some_and(|b| b >= 0.5))
        .map(|p| {
            format!(
                "{} at N={} ({:.0}% busy)",
                label(p),
                p.summary.point.workers,
                extra(p, "client_cpu_share").unwrap_or(0.0) * 100.0
            )
        })
        .collect();
    if !bound.is_empty() {
        f.limits.push(format!(
            "The load generator, not the server, was the bottleneck for: {}; those throughputs \
             are lower bounds (give the load generator more CPUs with --client-cpus, or use \
             keep-alive: --param keepalive=1).",
            bound.join(", ")
        ));
    }
    let missing = servers.iter().find_map(|p| {
        p.summary
            .counters
            .iter()
            .find(|c| c.name == "L1-icache-load-misses" && c.median.is_none())
            .map(|c| c.reason.clone().unwrap_or_else(|| "not counted".into()))
    });
    if let Some(why) = missing {
        f.limits.push(format!(
            "L1-I and L1-D misses and CPI per request (the paper's Table 3) are not shown: {why}."
        ));
    } else if servers.iter().all(|p| p.summary.counters.is_empty()) {
        f.limits.push(
            "L1-I and L1-D misses and CPI per request (the paper's Table 3) are not shown: \
             counters were off (--no-counters)."
                .to_string(),
        );
    }
}
