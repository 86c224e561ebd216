//! The chat study's findings: one table of every point (messages/s with
//! the server's costs per delivered message and per connection — the
//! quantities of Luo & John's figures) and verdicts: how each model's
//! kernel and user time per message grew from the smallest to the largest
//! connection count, which model delivered the most at each count, and
//! smtlab's event loop against ngircd.

use smtlab_analyse::analysis::PointData;
use smtlab_analyse::units::table_value;
use smtlab_types::{Program, Table};

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

fn extra(p: &PointData, key: &str) -> Option<f64> {
    p.summary.extras.get(key).copied()
}

fn median(p: &PointData) -> Option<f64> {
    p.summary.summary.as_ref().map(|s| s.median)
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
    let d = extra(p, "deliveries")?;
    (d > 0.0).then(|| v / d)
}

/// The chat study's table, verdicts and limits.
pub fn chat(points: &[PointData], _seed: u64, f: &mut WebFindings) {
    let mut chat: Vec<&PointData> = points.iter().filter(|p| who(p).is_some()).collect();
    if chat.is_empty() {
        return;
    }
    chat.sort_by_key(|p| (who(p), connections(p)));
    table(&chat, f);
    let mut names: Vec<String> = chat.iter().filter_map(|p| who(p)).collect();
    names.dedup();
    for name in &names {
        growth(&chat, name, f);
    }
    let mut counts: Vec<usize> = chat.iter().map(|p| connections(p)).collect();
    counts.sort_unstable();
    counts.dedup();
    for &c in &counts {
        best_at(&chat, c, f);
    }
    if chat
        .iter()
        .any(|p| extra(p, "client_bound").is_some_and(|b| b >= 0.5))
    {
        f.limits.push(
            "At some points the load generator's CPUs were saturated (marked client-bound in \
             the table): their messages/s are the client's limit, a lower bound of the \
             server's; give it more CPUs (--client-cpus) to measure the server."
                .to_string(),
        );
    }
}

fn table(chat: &[&PointData], f: &mut WebFindings) {
    let num =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    let rows = chat
        .iter()
        .map(|p| {
            let r = &p.summary;
            let note = if r.summary.is_none() {
                "no successful sample".to_string()
            } else if extra(p, "client_bound").is_some_and(|b| b >= 0.5) {
                "client-bound: a lower bound".to_string()
            } else {
                String::new()
            };
            let cpi = |scope: &str| {
                let cy = per_message(p, "cycles", scope)?;
                let ins = per_message(p, "instructions", scope)?;
                (ins > 0.0).then(|| cy / ins)
            };
            vec![
                who(p).unwrap_or_default(),
                connections(p).to_string(),
                median(p).map_or("failed".into(), |m| table_value(m, &r.point.metric.unit)),
                num(extra(p, "server_user_us_per_msg"), 2),
                num(extra(p, "server_sys_us_per_msg"), 2),
                num(extra(p, "voluntary_cs_per_msg"), 4),
                num(extra(p, "involuntary_cs_per_msg"), 4),
                num(extra(p, "server_threads"), 0),
                num(extra(p, "server_pss_kb_per_connection"), 1),
                num(per_message(p, "instructions", "user"), 0),
                num(per_message(p, "instructions", "kernel"), 0),
                num(cpi("kernel"), 2),
                num(per_message(p, "L1-dcache-load-misses", "kernel"), 1),
                num(per_message(p, "L1-icache-load-misses", "user"), 1),
                num(per_message(p, "iTLB-load-misses", "user"), 2),
                extra(p, "client_cpu_share").map_or("-".into(), |s| format!("{:.0}%", s * 100.0)),
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
/// 20 connections are one room, all in cache).
fn growth(chat: &[&PointData], name: &str, f: &mut WebFindings) {
    let mut mine: Vec<&PointData> = chat
        .iter()
        .copied()
        .filter(|p| who(p).as_deref() == Some(name) && p.summary.summary.is_some())
        .filter(|p| extra(p, "server_sys_us_per_msg").is_some())
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
    let sys = |p: &PointData| extra(p, "server_sys_us_per_msg").unwrap_or(f64::NAN);
    let user = |p: &PointData| extra(p, "server_user_us_per_msg").unwrap_or(f64::NAN);
    let ratio = |a: f64, b: f64| if a > 0.0 { b / a } else { f64::NAN };
    let rate = |p: &PointData| median(p).unwrap_or(f64::NAN);
    f.verdicts.push(format!(
        "{name}'s kernel time per message {} from {} to {} connections ({:.2} -> {:.2} µs), \
         its user time {} ({:.2} -> {:.2} µs); messages/s {} ({} -> {}).",
        change(ratio(sys(from), sys(to))),
        thousands(c0),
        thousands(c1),
        sys(from),
        sys(to),
        change(ratio(user(from), user(to))),
        user(from),
        user(to),
        change(ratio(rate(from), rate(to))),
        table_value(rate(from), "msg/s"),
        table_value(rate(to), "msg/s"),
    ));
}

/// Which server delivered the most at `c` connections, against the others.
fn best_at(chat: &[&PointData], c: usize, f: &mut WebFindings) {
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
    let others: Vec<String> = here[1..]
        .iter()
        .map(|(p, m)| format!("{:.2}x {}'s", top / m, who(p).unwrap_or_default()))
        .collect();
    let bound = if extra(best, "client_bound").is_some_and(|b| b >= 0.5) {
        " (the load generator was saturated there: a lower bound)"
    } else {
        ""
    };
    f.verdicts.push(format!(
        "At {} connections {} delivered the most messages/s ({}){bound}: {}.",
        thousands(c),
        who(best).unwrap_or_default(),
        table_value(top, "msg/s"),
        others.join(", ")
    ));
}

/// `grew 3.1x`, `fell to 0.62x`, `stayed within 5%`.
fn change(r: f64) -> String {
    if !r.is_finite() {
        "could not be compared".to_string()
    } else if r >= 1.05 {
        format!("grew {r:.1}x")
    } else if r <= 0.95 {
        format!("fell to {r:.2}x")
    } else {
        "stayed within 5%".to_string()
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

    #[test]
    fn changes_read_as_words() {
        assert_eq!(change(3.12), "grew 3.1x");
        assert_eq!(change(0.5), "fell to 0.50x");
        assert_eq!(change(1.01), "stayed within 5%");
        assert_eq!(change(f64::NAN), "could not be compared");
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(20), "20");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(10000), "10,000");
    }
}
