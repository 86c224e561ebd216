//! The web study's findings: one table of every server point (requests/s
//! with the server's costs per request, the paper's Tables 1–3 side by
//! side) and verdicts: which architecture served the most at each worker
//! count, smtlab's event loop against nginx, the paper's ranking checked,
//! and what an SMT sibling adds against what a second core adds.

use smtlab_analyse::analysis::{verdict, PointData};
use smtlab_analyse::units::table_value;
use smtlab_topology::Topology;
use smtlab_types::extras::{server, web};
use smtlab_types::{Model, Program, Table};

use crate::intervals::{self, Reading};
use crate::point_values::{client_bound, client_share, extra, median, num, server_note};

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
        Program::Server { server, .. } => Some(server.as_str()),
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
    let per_sample_ops = extra(p, web::REQUESTS_ANSWERED).unwrap_or(ops);
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

fn table(servers: &[&PointData], f: &mut WebFindings) {
    let rows = servers
        .iter()
        .map(|p| {
            let r = &p.summary;
            let note = server_note(p).unwrap_or_else(|| {
                if extra(p, server::CLIENT_PINNED).is_some_and(|b| b < 0.5) {
                    "client on the server's CPUs".to_string()
                } else {
                    String::new()
                }
            });
            vec![
                label(p),
                r.point.placement.clone(),
                r.point.workers.to_string(),
                cpus_text(p),
                median(p).map_or("failed".into(), |m| table_value(m, &r.point.metric.unit)),
                num(extra(p, web::SERVER_USER_US_PER_REQ), 1),
                num(extra(p, web::SERVER_SYS_US_PER_REQ), 1),
                num(extra(p, web::VOLUNTARY_CS_PER_REQ), 3),
                num(extra(p, web::INVOLUNTARY_CS_PER_REQ), 3),
                num(per_request(p, "L1-icache-load-misses"), 1),
                num(per_request(p, "L1-dcache-load-misses"), 1),
                num(cpi(p), 2),
                client_share(p),
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
/// as fractions of it (each with its 95% interval, or too few samples for
/// one); smtlab's event loop against nginx; and the paper's ranking checked
/// where all four architectures were measured, each half of it (event
/// fastest, staged slowest) judged on its own.
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
        let mut items = Vec::new();
        let (mut tied, mut contrary, mut unjudged) = (Vec::new(), Vec::new(), Vec::new());
        for p in web.iter().copied().filter(|p| !std::ptr::eq(*p, best)) {
            if let Some(v) = verdict::compare(p, best, &label(p), &label(best), &at, seed) {
                let e = intervals::from_verdict(&v, p, best);
                let model = p.summary.point.model.to_string();
                match e.ratio_reading() {
                    Reading::Below => {}
                    Reading::None(_) => unjudged.push(model),
                    Reading::Within => tied.push(model),
                    // A percentile interval need not hold its median.
                    Reading::Above => contrary.push(model),
                }
                items.push((format!("{} {:.2}x", p.summary.point.model, e.value), e));
            }
        }
        let value = table_value(median(best).unwrap_or(0.0), &best.summary.point.metric.unit);
        let but = intervals::best_caveats(&tied, &contrary, &unjudged, items.len(), "serve");
        let lead = if but.is_empty() && unjudged.is_empty() {
            format!("served the most, {value}")
        } else if but.is_empty() {
            format!("served the most by median, {value}")
        } else {
            format!(
                "served the most by median, {value}, but {}",
                but.join(" and ")
            )
        };
        if !items.is_empty() {
            f.verdicts.push(format!(
                "With {at}: the {} architecture {lead}; the others served {} of that.",
                best.summary.point.model,
                intervals::list_with_cis(&items)
            ));
        }
        let by = |m: Model| web.iter().copied().find(|p| p.summary.point.model == m);
        if let (Some(event), Some(process), Some(staged)) =
            (by(Model::Event), by(Model::Process), by(Model::Staged))
        {
            if web.len() == 4 {
                let against_process =
                    verdict::compare(event, process, "event", "process", &at, seed)
                        .map(|v| {
                            let e = intervals::from_verdict(&v, event, process);
                            format!("{:.2}x process ({}", e.value, e.ci_x())
                        })
                        .unwrap_or_else(|| "an unknown multiple of process (no ratio".to_string());
                f.verdicts.push(format!(
                    "The paper found the event-driven server fastest (Flash 1.5–2.5x Apache) and \
                     the staged one slowest; with {at} here, event served {against_process}; \
                     process is Apache prefork's architecture); {}; {}.",
                    paper_extreme(event, &web, Extreme::Fastest, &at, seed),
                    paper_extreme(staged, &web, Extreme::Slowest, &at, seed),
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

/// The half of the paper's ranking one architecture stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Extreme {
    Fastest,
    Slowest,
}

impl Extreme {
    fn word(self) -> &'static str {
        match self {
            Extreme::Fastest => "fastest",
            Extreme::Slowest => "slowest",
        }
    }

    /// `highest` or `lowest` median.
    fn end(self) -> &'static str {
        match self {
            Extreme::Fastest => "highest",
            Extreme::Slowest => "lowest",
        }
    }

    /// How another architecture's speed over the extreme one's reads when
    /// the extreme is significant: below it for the fastest, above it for
    /// the slowest.
    fn others_read(self) -> Reading {
        match self {
            Extreme::Fastest => Reading::Below,
            Extreme::Slowest => Reading::Above,
        }
    }
}

/// Whether `target` (event, staged) was the fastest (slowest) of `web`, as
/// the paper found: said as held, did not hold, not confirmed (an interval
/// that includes no difference) or not judged (too few samples), with the
/// ratio and interval it rests on.
fn paper_extreme(
    target: &PointData,
    web: &[&PointData],
    extreme: Extreme,
    at: &str,
    seed: u64,
) -> String {
    let name = target.summary.point.model.to_string();
    let (word, end) = (extreme.word(), extreme.end());
    let by_median = |a: &&PointData, b: &&PointData| {
        median(a)
            .unwrap_or(f64::NAN)
            .total_cmp(&median(b).unwrap_or(f64::NAN))
    };
    let ext = match extreme {
        Extreme::Fastest => web.iter().copied().max_by(by_median),
        Extreme::Slowest => web.iter().copied().min_by(by_median),
    }
    .expect("four architectures");
    let speed = |a: &PointData, b: &PointData| {
        verdict::compare(a, b, &label(a), &label(b), at, seed)
            .map(|v| intervals::from_verdict(&v, a, b))
    };
    if !std::ptr::eq(ext, target) {
        let other = ext.summary.point.model.to_string();
        let Some(e) = speed(target, ext) else {
            return format!("the {word} was {other}; {name} could not be compared with it");
        };
        return match e.ratio_reading() {
            r if r == extreme.others_read() => format!(
                "the paper's '{name} {word}' did not hold: {name} served {:.2}x of {other}'s \
                 requests/s ({}; {other} had the {end} median)",
                e.value,
                e.ci_x()
            ),
            Reading::None(_) => format!(
                "{other} had the {end} median ({name} served {:.2}x of it, {}): whether {name} \
                 was the {word}, as the paper found, cannot be judged",
                e.value,
                e.ci_x()
            ),
            _ => format!(
                "{other} had the {end} median, but {name} served {} of it: the paper's \
                 '{name} {word}' is neither confirmed nor contradicted here",
                e.x_with_ci()
            ),
        };
    }
    let others: Vec<(String, intervals::Estimate)> = web
        .iter()
        .copied()
        .filter(|p| !std::ptr::eq(*p, target))
        .filter_map(|p| Some((p.summary.point.model.to_string(), speed(p, target)?)))
        .collect();
    let expected = extreme.others_read();
    let unjudged: Vec<String> = others
        .iter()
        .filter(|(_, e)| matches!(e.ratio_reading(), Reading::None(_)))
        .map(|(m, _)| m.clone())
        .collect();
    let unconfirmed: Vec<&(String, intervals::Estimate)> = others
        .iter()
        .filter(|(_, e)| !matches!(e.ratio_reading(), Reading::None(_)))
        .filter(|(_, e)| e.ratio_reading() != expected)
        .collect();
    if let Some((m, e)) = unconfirmed.first() {
        return format!(
            "{name} had the {end} median, but {m} served {} of it: the paper's '{name} {word}' \
             is not confirmed here",
            e.x_with_ci()
        );
    }
    if !unjudged.is_empty() {
        return format!(
            "{name} had the {end} median, but with too few samples for an interval against {}: \
             whether it was the {word}, as the paper found, cannot be judged",
            intervals::and_list(&unjudged)
        );
    }
    // Every other architecture on the expected side: the closest one says
    // by how much.
    let closest = others
        .iter()
        .min_by(|a, b| (a.1.value - 1.0).abs().total_cmp(&(b.1.value - 1.0).abs()));
    match closest {
        Some((m, e)) => format!(
            "{name} was the {word}, as the paper found (the closest, {m}, served {:.2}x of it, {})",
            e.value,
            e.ci_x()
        ),
        None => format!("{name} had the {end} median"),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A gain over one worker: `+27.5% (95% CI +16.4% to +37.5%)`, with an
/// interval that includes no gain said as such, or too few samples.
fn gain_text(e: &intervals::Estimate) -> String {
    let pct = |r: f64| (r - 1.0) * 100.0;
    let ci = match (e.ci, e.ratio_reading()) {
        (Ok((lo, hi)), Reading::Within) => format!(
            "95% CI {:+.1}% to {:+.1}%: no significant change",
            pct(lo),
            pct(hi)
        ),
        (Ok((lo, hi)), _) => format!("95% CI {:+.1}% to {:+.1}%", pct(lo), pct(hi)),
        (Err(why), _) => why.text().to_string(),
    };
    format!("{:+.1}% ({ci})", pct(e.value))
}

/// Per architecture: what two SMT siblings of one core serve against one
/// worker, and what two cores serve, each with its 95% interval; and the
/// first gain as a share of the second with its own bootstrap interval,
/// only where two cores' gain is known to be above zero (the paper: SMT
/// +12–32% for Apache, a quarter to two fifths of a second processor's
/// gain).
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
        let e_smt = intervals::from_verdict(&v_smt, smt, one);
        let mut s = format!(
            "{name}: two SMT siblings of one core served {} against one worker",
            gain_text(&e_smt)
        );
        if let Some((cores, v_core)) = cores.and_then(|c| {
            Some((
                c,
                verdict::compare(c, one, "two cores", "one worker", &name, seed)?,
            ))
        }) {
            let e_core = intervals::from_verdict(&v_core, cores, one);
            s.push_str(&format!(", two cores {}", gain_text(&e_core)));
            let share = match e_core.ratio_reading() {
                Reading::Above => intervals::gain_share(
                    &smt.values,
                    &cores.values,
                    &one.values,
                    one.summary.point.metric.higher_is_better,
                    seed,
                )
                .map_or(
                    "SMT's share of a second core's gain could not be computed".to_string(),
                    |e| match e.ci {
                        Ok((lo, hi)) => format!(
                            "SMT gave {:.2} (95% CI {lo:.2}–{hi:.2}) of a second core's gain",
                            e.value
                        ),
                        Err(why) => format!(
                            "SMT gave {:.2} ({}) of a second core's gain",
                            e.value,
                            why.text()
                        ),
                    },
                ),
                Reading::Within => "two cores' gain is not distinguishable from none, so what \
                                    share of it SMT gave cannot be judged"
                    .to_string(),
                Reading::Below => "two cores served less than one worker: there is no second \
                                   core's gain to set SMT's against"
                    .to_string(),
                Reading::None(why) => format!(
                    "what share of two cores' gain SMT gave cannot be judged: {}",
                    why.text()
                ),
            };
            s.push_str(": ");
            s.push_str(&share);
        }
        s.push_str(" (the paper: SMT +12–32% for Apache, a quarter to two fifths of a second processor's gain).");
        f.verdicts.push(s);
    }
}

/// What this run could not show: client-bound points, counters missing.
fn limits(servers: &[&PointData], f: &mut WebFindings) {
    let bound: Vec<String> = servers
        .iter()
        .filter(|p| client_bound(p))
        .map(|p| {
            format!(
                "{} at N={} ({:.0}% busy)",
                label(p),
                p.summary.point.workers,
                extra(p, server::CLIENT_CPU_SHARE).unwrap_or(0.0) * 100.0
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{around, data, find};
    use smtlab_types::{Metric, Mode, Point, Spawn};

    fn point(index: usize, server: &str, model: Model, placement: &str, cpus: &[u32]) -> Point {
        Point {
            index,
            program: Program::Server {
                server: smtlab_types::ServerKind::from_name(server).expect("a server"),
                params: Default::default(),
                client_cpus: None,
            },
            model,
            spawn: Spawn::Exec,
            placement: placement.into(),
            workers: cpus.len(),
            cpus: Some(cpus.to_vec()),
            oversubscription: 1.0,
            alloc: "glibc".into(),
            mode: Mode::FixedTime { seconds: 1.0 },
            metric: Metric {
                name: "requests".into(),
                unit: "req/s".into(),
                higher_is_better: true,
            },
        }
    }

    fn verdicts(points: &[PointData]) -> Vec<String> {
        let topo = smtlab_topology::synthetic::parse("core:4 pu:2").unwrap();
        let mut f = WebFindings::default();
        web(points, &topo, 7, &mut f);
        f.verdicts
    }

    fn four(centers: [f64; 4], rel: f64, n: usize) -> Vec<PointData> {
        [Model::Process, Model::Thread, Model::Event, Model::Staged]
            .into_iter()
            .zip(centers)
            .enumerate()
            .map(|(i, (m, c))| data(point(i, "web", m, "compact", &[0]), &around(c, rel, n)))
            .collect()
    }

    #[test]
    fn the_fastest_and_the_paper_are_said_with_their_intervals() {
        let v = verdicts(&four([1000.0, 1100.0, 1500.0, 700.0], 0.02, 8));
        let lead = find(&v, "With 1 worker on CPU 0: ");
        assert!(
            lead.starts_with(
                "With 1 worker on CPU 0: the event architecture served the most, 1.500 kreq/s; \
                 the others served process 0.67x (95% CI "
            ),
            "{lead}"
        );
        assert!(lead.contains("staged 0.47x (95% CI 0."), "{lead}");
        assert!(!lead.contains("(95% CIs)"), "{lead}");
        let paper = find(&v, "The paper found");
        assert!(
            paper.contains("event served 1.50x process (95% CI 1.4"),
            "{paper}"
        );
        assert!(
            paper.contains(
                "event was the fastest, as the paper found (the closest, thread, served 0.73x of \
                 it, 95% CI 0.7"
            ),
            "{paper}"
        );
        assert!(
            paper.contains(
                "staged was the slowest, as the paper found (the closest, process, served 1.43x \
                 of it, 95% CI 1."
            ),
            "{paper}"
        );
    }

    #[test]
    fn the_paper_not_holding_names_the_part_that_did_not() {
        // The guest's case: thread fastest, staged slowest.
        let v = verdicts(&four([1000.0, 1300.0, 1100.0, 700.0], 0.02, 8));
        let paper = find(&v, "The paper found");
        assert!(
            paper.contains(
                "the paper's 'event fastest' did not hold: event served 0.85x of thread's \
                 requests/s (95% CI 0.8"
            ),
            "{paper}"
        );
        assert!(
            paper.contains("staged was the slowest, as the paper found"),
            "{paper}"
        );
        assert!(
            paper.contains("; thread had the highest median)"),
            "{paper}"
        );
        assert!(!paper.contains("as in the paper"), "{paper}");
        // Event and thread within the noise of each other: neither way.
        let v = verdicts(&four([1000.0, 1110.0, 1100.0, 700.0], 0.1, 8));
        let lead = find(&v, "With 1 worker on CPU 0: ");
        assert!(
            lead.contains("served the most by median, 1.110 kreq/s, but not distinguishable from"),
            "{lead}"
        );
        assert!(lead.contains("event"), "{lead}");
        let paper = find(&v, "The paper found");
        assert!(
            paper.contains("thread had the highest median, but event served 0.99x (95% CI 0.9")
                && paper.contains(
                    "the paper's 'event fastest' is neither confirmed nor contradicted here"
                ),
            "{paper}"
        );
    }

    #[test]
    fn two_samples_are_too_few_and_say_so() {
        let v = verdicts(&four([1000.0, 1100.0, 1500.0, 700.0], 0.02, 2));
        let lead = find(&v, "With 1 worker on CPU 0: ");
        assert_eq!(
            lead,
            "With 1 worker on CPU 0: the event architecture served the most by median, 1.500 \
             kreq/s; the others served process 0.67x, thread 0.73x, staged 0.47x (too few \
             samples for an interval) of that."
        );
        let paper = find(&v, "The paper found");
        assert!(
            paper.contains("event served 1.50x process (too few samples for an interval;"),
            "{paper}"
        );
        assert!(
            paper.contains(
                "event had the highest median, but with too few samples for an interval against \
                 process, thread and staged: whether it was the fastest, as the paper found, \
                 cannot be judged"
            ),
            "{paper}"
        );
        assert!(paper.contains("whether it was the slowest"), "{paper}");
        // Process with two samples, the others with eight: only process
        // is not judged, and the lead says so.
        let mut points = four([1000.0, 1100.0, 1500.0, 700.0], 0.02, 8);
        points[0] = data(
            point(0, "web", Model::Process, "compact", &[0]),
            &around(1000.0, 0.02, 2),
        );
        let v = verdicts(&points);
        let lead = find(&v, "With 1 worker on CPU 0: ");
        assert!(
            lead.starts_with(
                "With 1 worker on CPU 0: the event architecture served the most by median, 1.500 \
                 kreq/s, but with too few samples to tell it from process; the others served \
                 process 0.67x (too few samples for an interval), thread 0.73x (95% CI 0."
            ),
            "{lead}"
        );
        let paper = find(&v, "The paper found");
        assert!(
            paper.contains(
                "event had the highest median, but with too few samples for an interval against \
                 process: whether it was the fastest"
            ),
            "{paper}"
        );
    }

    /// One worker on CPU 0, two SMT siblings of core 0, two cores.
    fn smt_points(one: &[f64], smt: &[f64], cores: &[f64]) -> Vec<PointData> {
        vec![
            data(point(0, "web", Model::Process, "compact", &[0]), one),
            data(point(1, "web", Model::Process, "compact", &[0, 1]), smt),
            data(point(2, "web", Model::Process, "core", &[0, 2]), cores),
        ]
    }

    #[test]
    fn smt_against_a_second_core_is_a_share_with_its_interval() {
        let topo = smtlab_topology::synthetic::parse("core:4 pu:2").unwrap();
        assert!(topo.cores[0].cpus.contains(1) && !topo.cores[0].cpus.contains(2));
        let v = verdicts(&smt_points(
            &around(1000.0, 0.01, 8),
            &around(1250.0, 0.01, 8),
            &around(2000.0, 0.01, 8),
        ));
        let s = find(&v, "web process: ");
        assert!(
            s.starts_with("web process: two SMT siblings of one core served +25.0% (95% CI +2"),
            "{s}"
        );
        assert!(s.contains(", two cores +100.0% (95% CI +9"), "{s}");
        assert!(
            s.contains(": SMT gave 0.25 (95% CI 0.24–0.26) of a second core's gain (the paper:"),
            "{s}"
        );
    }

    #[test]
    fn a_share_of_gains_within_the_noise_is_not_judged() {
        // The guest's case: both gains' intervals include zero.
        let v = verdicts(&smt_points(
            &around(1000.0, 0.3, 3),
            &around(1275.0, 0.3, 3),
            &around(1176.0, 0.3, 3),
        ));
        let s = find(&v, "web process: ");
        assert!(
            s.contains("served +27.5% (95% CI ") && s.contains(": no significant change)"),
            "{s}"
        );
        assert!(
            s.contains(
                ": two cores' gain is not distinguishable from none, so what share of it SMT \
                 gave cannot be judged (the paper:"
            ),
            "{s}"
        );
        assert!(!s.contains("SMT gave 1."), "{s}");
        // Two samples: no interval, said.
        let v = verdicts(&smt_points(
            &around(1000.0, 0.01, 2),
            &around(1250.0, 0.01, 2),
            &around(2000.0, 0.01, 2),
        ));
        let s = find(&v, "web process: ");
        assert_eq!(
            s,
            "web process: two SMT siblings of one core served +25.0% (too few samples for an \
             interval) against one worker, two cores +100.0% (too few samples for an interval): \
             what share of two cores' gain SMT gave cannot be judged: too few samples for an \
             interval (the paper: SMT +12–32% for Apache, a quarter to two fifths of a second \
             processor's gain)."
        );
    }
}
