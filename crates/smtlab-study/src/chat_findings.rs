//! The chat study's findings: one table of every point (messages/s with
//! the server's costs per delivered message and per connection — the
//! quantities of Luo & John's figures) and verdicts: how each model's
//! kernel and user time per message grew from the smallest to the largest
//! connection count, which model delivered the most at each count, and
//! smtlab's event loop against ngircd. Every change and every ratio
//! carries its bootstrap 95% interval (the per-message costs from each
//! sample's own values), or says there were too few samples for one.

use smtlab_analyse::analysis::PointData;
use smtlab_analyse::summary::RunData;
use smtlab_analyse::units::table_value;
use smtlab_types::extras::chat;
use smtlab_types::{Point, Program, Sample, Table};

use crate::intervals::{self, Estimate, Reading};
use crate::point_values::{client_bound, client_share, extra, median, num, server_note};
use crate::web_findings::WebFindings;

/// `thread2`, `thread`, `event` for smtlab's chat server; `ngircd`.
fn who(p: &PointData) -> Option<String> {
    match &p.summary.point.program {
        Program::Server { server, .. } if server == "chat" => {
            Some(p.summary.point.model.to_string())
        }
        Program::Server { server, .. } if server == "ngircd" => Some("ngircd".into()),
        _ => None,
    }
}

fn connections(p: &PointData) -> usize {
    crate::chat_plan::connections_of(&p.summary.point)
}

/// A counter per delivered message: the phase's count (stored with each
/// sample) over the deliveries, `user` or `kernel`.
fn per_message(p: &PointData, name: &str, scope: &str) -> Option<f64> {
    let v = p
        .summary
        .counters
        .iter()
        .find(|c| c.name == name && c.scope.as_str() == scope)?
        .median?;
    let d = extra(p, chat::DELIVERIES)?;
    (d > 0.0).then(|| v / d)
}

/// The chat study's table, verdicts and limits, from a stored run: the
/// points and every sample (the per-message costs' intervals come from
/// each sample's values).
pub fn chat_study(data: &RunData, seed: u64, f: &mut WebFindings) {
    let mut chat: Vec<&PointData> = data.points.iter().filter(|p| who(p).is_some()).collect();
    if chat.is_empty() {
        return;
    }
    chat.sort_by_key(|p| (who(p), connections(p)));
    table(&chat, f);
    let mut names: Vec<String> = chat.iter().filter_map(|p| who(p)).collect();
    names.dedup();
    for name in &names {
        growth(&chat, name, &data.samples, seed, f);
    }
    let mut counts: Vec<usize> = chat.iter().map(|p| connections(p)).collect();
    counts.sort_unstable();
    counts.dedup();
    for &c in &counts {
        best_at(&chat, c, seed, f);
    }
    if chat.iter().any(|p| client_bound(p)) {
        f.limits.push(
            "At some points the load generator's CPUs were saturated (marked client-bound in \
             the table): their messages/s are the client's limit, a lower bound of the \
             server's; give it more CPUs (--client-cpus) to measure the server."
                .to_string(),
        );
    }
}

fn table(chat: &[&PointData], f: &mut WebFindings) {
    let rows = chat
        .iter()
        .map(|p| {
            let r = &p.summary;
            let note = server_note(p).unwrap_or_default();
            let cpi = |scope: &str| {
                let cy = per_message(p, "cycles", scope)?;
                let ins = per_message(p, "instructions", scope)?;
                (ins > 0.0).then(|| cy / ins)
            };
            vec![
                who(p).unwrap_or_default(),
                connections(p).to_string(),
                median(p).map_or("failed".into(), |m| table_value(m, &r.point.metric.unit)),
                num(extra(p, chat::SERVER_USER_US_PER_MSG), 2),
                num(extra(p, chat::SERVER_SYS_US_PER_MSG), 2),
                num(extra(p, chat::VOLUNTARY_CS_PER_MSG), 4),
                num(extra(p, chat::INVOLUNTARY_CS_PER_MSG), 4),
                num(extra(p, chat::SERVER_THREADS), 0),
                num(extra(p, chat::SERVER_PSS_KB_PER_CONNECTION), 1),
                num(per_message(p, "instructions", "user"), 0),
                num(per_message(p, "instructions", "kernel"), 0),
                num(cpi("kernel"), 2),
                num(per_message(p, "L1-dcache-load-misses", "kernel"), 1),
                num(per_message(p, "L1-icache-load-misses", "user"), 1),
                num(per_message(p, "iTLB-load-misses", "user"), 2),
                client_share(p),
                note,
            ]
        })
        .collect();
    f.tables.push(Table {
        title: "Chat servers: messages delivered/s and what each message and connection cost"
            .to_string(),
        columns: [
            "server",
            "connections",
            "messages/s",
            "user µs/msg",
            "sys µs/msg",
            "vol. cs/msg",
            "invol. cs/msg",
            "threads",
            "KiB/conn",
            "user instr/msg",
            "kernel instr/msg",
            "kernel CPI",
            "kernel L1-D miss/msg",
            "user L1-I miss/msg",
            "user iTLB miss/msg",
            "client CPU",
            "note",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: Some(
            "medians over samples; a sample is one server lifetime: every client registers and \
             joins its room of 20, then each sends its messages, each delivered to the 19 \
             others; the server's CPU time, context switches (all its threads) and counters \
             cover the message phase only, per delivered message; KiB/conn is the server's PSS \
             growth from start to the end of the messages over the connections; counters where \
             a PMU counts them ('-' where not)"
                .to_string(),
        ),
    });
}

/// How `name`'s costs per message grew from the smallest to the largest
/// connection count measured (from 200 when 200 or more were measured:
/// 20 connections are one room, all in cache), each change a ratio of
/// medians with its 95% interval.
fn growth(
    chat: &[&PointData],
    name: &str,
    samples: &[(Point, Vec<Sample>)],
    seed: u64,
    f: &mut WebFindings,
) {
    let mut mine: Vec<&PointData> = chat
        .iter()
        .copied()
        .filter(|p| who(p).as_deref() == Some(name) && p.summary.summary.is_some())
        .filter(|p| extra(p, chat::SERVER_SYS_US_PER_MSG).is_some())
        .collect();
    mine.sort_by_key(|p| connections(p));
    if mine.len() < 2 {
        return;
    }
    let from = mine
        .iter()
        .find(|p| connections(p) >= 200)
        .filter(|p| connections(p) < connections(mine[mine.len() - 1]))
        .copied()
        .unwrap_or(mine[0]);
    let to = mine[mine.len() - 1];
    let (c0, c1) = (connections(from), connections(to));
    let sys = |p: &PointData| extra(p, chat::SERVER_SYS_US_PER_MSG).unwrap_or(f64::NAN);
    let user = |p: &PointData| extra(p, chat::SERVER_USER_US_PER_MSG).unwrap_or(f64::NAN);
    let rate = |p: &PointData| median(p).unwrap_or(f64::NAN);
    // A per-message cost's change, from each sample's own value.
    let cost = |key: &str| -> Option<Estimate> {
        intervals::ratio(
            &intervals::extra_values(samples, &to.summary.point, key),
            &intervals::extra_values(samples, &from.summary.point, key),
            seed,
        )
    };
    let (k_word, k_ci) = change(cost(chat::SERVER_SYS_US_PER_MSG));
    let (u_word, u_ci) = change(cost(chat::SERVER_USER_US_PER_MSG));
    let (m_word, m_ci) = change(intervals::ratio(&to.values, &from.values, seed));
    f.verdicts.push(format!(
        "{name}'s kernel time per message {k_word} from {} to {} connections ({:.2} -> {:.2} \
         µs{k_ci}), its user time {u_word} ({:.2} -> {:.2} µs{u_ci}); messages/s {m_word} ({} \
         -> {}{m_ci}).",
        thousands(c0),
        thousands(c1),
        sys(from),
        sys(to),
        user(from),
        user(to),
        table_value(rate(from), "msg/s"),
        table_value(rate(to), "msg/s"),
    ));
}

/// Which server delivered the most at `c` connections, against the others:
/// each ratio with its 95% interval; a lead that an interval does not
/// support is said to be by median only.
fn best_at(chat: &[&PointData], c: usize, seed: u64, f: &mut WebFindings) {
    let mut here: Vec<(&PointData, f64)> = chat
        .iter()
        .copied()
        .filter(|p| connections(p) == c)
        .filter_map(|p| Some((p, median(p)?)))
        .collect();
    if here.len() < 2 {
        return;
    }
    here.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (best, top) = here[0];
    let mut items = Vec::new();
    let (mut tied, mut contrary, mut unjudged) = (Vec::new(), Vec::new(), Vec::new());
    for (p, _) in &here[1..] {
        let Some(e) = intervals::ratio(&best.values, &p.values, seed) else {
            continue;
        };
        let other = who(p).unwrap_or_default();
        match e.ratio_reading() {
            Reading::Above => {}
            Reading::None(_) => unjudged.push(other.clone()),
            Reading::Within => tied.push(other.clone()),
            // A percentile interval need not hold its median.
            Reading::Below => contrary.push(other.clone()),
        }
        items.push((format!("{:.2}x {other}'s", e.value), e));
    }
    let bound = if client_bound(best) {
        " (the load generator was saturated there: a lower bound)"
    } else {
        ""
    };
    if items.is_empty() {
        return;
    }
    let mut lead = String::new();
    if !tied.is_empty() || !contrary.is_empty() || !unjudged.is_empty() {
        lead.push_str(" by median");
    }
    let but = intervals::best_caveats(&tied, &contrary, &unjudged, items.len(), "deliver");
    let but = if but.is_empty() {
        String::new()
    } else {
        format!(", but {}", but.join(" and "))
    };
    f.verdicts.push(format!(
        "At {} connections {} delivered the most messages/s{lead} ({}){bound}{but}: {}.",
        thousands(c),
        who(best).unwrap_or_default(),
        table_value(top, "msg/s"),
        intervals::list_with_cis(&items)
    ));
}

/// A change as a verb and its interval: (`grew 3.1x`, `; 95% CI
/// 2.90–3.32x`), (`fell to 0.62x`, ...), (`showed no significant change`,
/// `; 1.02x, 95% CI 0.95–1.10x`) when the interval includes 1, (`measured
/// 0.85x`, `; too few samples for an interval`) without one, and
/// (`could not be compared`, ...) without a ratio.
fn change(e: Option<Estimate>) -> (String, String) {
    let Some(e) = e else {
        // A zero median (a cost below the clock's tick) has no ratio.
        return (
            "could not be compared".to_string(),
            "; a zero median has no ratio".to_string(),
        );
    };
    let r = e.value;
    match e.ratio_reading() {
        Reading::Above => (format!("grew {r:.1}x"), format!("; {}", e.ci_x())),
        Reading::Below => (format!("fell to {r:.2}x"), format!("; {}", e.ci_x())),
        Reading::Within => (
            "showed no significant change".to_string(),
            format!("; {r:.2}x, {}", e.ci_x()),
        ),
        Reading::None(why) => (format!("measured {r:.2}x"), format!("; {}", why.text())),
    }
}

/// `10,000`.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intervals::NoInterval;

    #[test]
    fn changes_read_as_words_with_their_intervals() {
        let e = |value: f64, ci: Result<(f64, f64), NoInterval>| Some(Estimate { value, ci });
        assert_eq!(
            change(e(3.12, Ok((2.9, 3.32)))),
            ("grew 3.1x".into(), "; 95% CI 2.90–3.32x".into())
        );
        assert_eq!(
            change(e(0.5, Ok((0.45, 0.55)))),
            ("fell to 0.50x".into(), "; 95% CI 0.45–0.55x".into())
        );
        // Medians 15% apart, but an interval that includes 1: no claim.
        assert_eq!(
            change(e(0.85, Ok((0.7, 1.1)))),
            (
                "showed no significant change".into(),
                "; 0.85x, 95% CI 0.70–1.10x".into()
            )
        );
        assert_eq!(
            change(e(0.85, Err(NoInterval::TooFew))),
            (
                "measured 0.85x".into(),
                "; too few samples for an interval".into()
            )
        );
        assert_eq!(
            change(None),
            (
                "could not be compared".into(),
                "; a zero median has no ratio".into()
            )
        );
    }

    use crate::testing::{self, around, find, run};
    use smtlab_types::{Metric, Mode, Model, Spawn};
    use std::collections::BTreeMap;

    fn point(index: usize, server: &str, model: Model, connections: usize) -> Point {
        Point {
            index,
            program: Program::Server {
                server: smtlab_types::ServerKind::from_name(server).expect("a server"),
                params: [("connections".to_string(), connections.to_string())].into(),
                client_cpus: None,
            },
            model,
            spawn: Spawn::Exec,
            placement: "compact".into(),
            workers: 1,
            cpus: Some([0].into_iter().collect()),
            oversubscription: 1.0,
            alloc: "glibc".into(),
            mode: Mode::FixedWork { work: 1 },
            metric: Metric {
                name: "messages".into(),
                unit: "msg/s".into(),
                higher_is_better: true,
            },
        }
    }

    /// A point's samples: messages/s, kernel and user µs per message (a
    /// warm-up first, which no statistic counts).
    fn samples(rate: &[f64], sys: &[f64], user: &[f64]) -> Vec<Sample> {
        let sample = |seq: usize, warmup: bool, i: usize| Sample {
            extras: BTreeMap::from([
                (
                    "server_sys_us_per_msg".to_string(),
                    if warmup { 1e6 } else { sys[i] },
                ),
                (
                    "server_user_us_per_msg".to_string(),
                    if warmup { 1e6 } else { user[i] },
                ),
                ("deliveries".to_string(), 19_000.0),
            ]),
            ..testing::sample(seq, warmup, if warmup { 1.0 } else { rate[i] })
        };
        let mut out = vec![sample(0, true, 0)];
        out.extend((0..rate.len()).map(|i| sample(i + 1, false, i)));
        out
    }

    fn verdicts(data: &RunData) -> Vec<String> {
        let mut f = WebFindings::default();
        chat_study(data, 7, &mut f);
        f.verdicts
    }

    /// The guest's event server from 20 to 40 connections, `n` samples a
    /// point: kernel time down 15%, user time unchanged but noisy,
    /// messages/s up 1.3x.
    fn event_20_40(n: usize) -> RunData {
        run(vec![
            (
                point(0, "chat", Model::Event, 20),
                samples(
                    &around(18_000.0, 0.02, n),
                    &around(26.18, 0.02, n),
                    &around(3.1, 0.2, n),
                ),
            ),
            (
                point(1, "chat", Model::Event, 40),
                samples(
                    &around(23_400.0, 0.02, n),
                    &around(22.17, 0.02, n),
                    &around(3.2, 0.2, n),
                ),
            ),
        ])
    }

    #[test]
    fn growth_states_each_change_with_its_interval() {
        let v = verdicts(&event_20_40(8));
        let s = find(&v, "event's kernel time per message");
        assert!(
            s.starts_with(
                "event's kernel time per message fell to 0.85x from 20 to 40 connections (26.18 \
                 -> 22.17 µs; 95% CI 0.8"
            ),
            "{s}"
        );
        // User time 3.1 -> 3.2 µs (3%), samples spread 20%: not "within
        // 5%", no significant change, with the interval that says so.
        assert!(
            s.contains(
                "its user time showed no significant change (3.10 -> 3.20 µs; 1.03x, 95% CI 0."
            ),
            "{s}"
        );
        assert!(!s.contains("within 5%"), "{s}");
        assert!(
            s.contains("messages/s grew 1.3x (18.00 kmsg/s -> 23.40 kmsg/s; 95% CI 1.2"),
            "{s}"
        );
    }

    #[test]
    fn growth_with_too_few_samples_says_so() {
        let v = verdicts(&event_20_40(2));
        assert_eq!(
            find(&v, "event's kernel time per message"),
            "event's kernel time per message measured 0.85x from 20 to 40 connections (26.18 -> \
             22.17 µs; too few samples for an interval), its user time measured 1.03x (3.10 -> \
             3.20 µs; too few samples for an interval); messages/s measured 1.30x (18.00 kmsg/s \
             -> 23.40 kmsg/s; too few samples for an interval)."
        );
    }

    /// Four servers at 20 connections, `n` samples each; thread2 at
    /// `thread2` kmsg/s.
    fn at_20(n: usize, thread2: f64) -> RunData {
        let one = |i: usize, server: &str, model: Model, rate: f64| {
            (
                point(i, server, model, 20),
                samples(
                    &around(rate, 0.02, n),
                    &around(5.0, 0.02, n),
                    &around(2.0, 0.02, n),
                ),
            )
        };
        run(vec![
            one(0, "chat", Model::Event, 23_560.0),
            one(1, "chat", Model::Thread2, thread2),
            one(2, "ngircd", Model::Event, 9_130.0),
            one(3, "chat", Model::Thread, 4_505.0),
        ])
    }

    #[test]
    fn the_most_at_a_count_gives_each_ratio_its_interval() {
        let v = verdicts(&at_20(8, 11_166.0));
        let s = find(&v, "At 20 connections");
        assert!(
            s.starts_with(
                "At 20 connections event delivered the most messages/s (23.56 kmsg/s): 2.11x \
                 thread2's (95% CI 2."
            ),
            "{s}"
        );
        assert!(s.contains("2.58x ngircd's (95% CI 2."), "{s}");
        assert!(s.contains("5.23x thread's (95% CI 5."), "{s}");
        // thread2 as fast as event: by median only, and said.
        let v = verdicts(&at_20(8, 23_400.0));
        let s = find(&v, "At 20 connections");
        assert!(
            s.starts_with(
                "At 20 connections event delivered the most messages/s by median (23.56 \
                 kmsg/s), but not distinguishable from thread2: 1.01x thread2's (95% CI 0.9"
            ),
            "{s}"
        );
        // One sample each: no interval, said once.
        let v = verdicts(&at_20(1, 11_166.0));
        assert_eq!(
            find(&v, "At 20 connections"),
            "At 20 connections event delivered the most messages/s by median (23.56 kmsg/s): \
             2.11x thread2's, 2.58x ngircd's, 5.23x thread's (too few samples for an interval)."
        );
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(20), "20");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(10000), "10,000");
    }
}
