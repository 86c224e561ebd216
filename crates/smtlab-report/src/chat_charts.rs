//! The charts of a chat study (or any run of `-w chat`/`-w ngircd` at more
//! than one connection count): messages delivered per second, and the
//! server's kernel and user time per message, against connections, a line
//! per model and ngircd — Luo & John's figures with today's kernel and the
//! event loop beside VolanoMark's two threads per connection. The generic
//! charts plot against N, which a chat sweep keeps at one.

use smtlab_analyse::analysis::PointData;
use smtlab_types::extras::chat;
use smtlab_types::Program;

use crate::charts::ChartSpec;
use crate::plot::{Line, LinePlot, Plot, Scale, Xy};

/// The heading the charts come under in a report.
const GROUP: &str = "chat servers";

/// `thread2`, `thread`, `event` of smtlab's chat server, or `ngircd`, and
/// the point's connections.
fn series(p: &PointData) -> Option<(String, f64)> {
    let pt = &p.summary.point;
    let (name, params) = match &pt.program {
        Program::Server { server, params, .. } if server == "chat" => {
            (pt.model.to_string(), params)
        }
        Program::Server { server, params, .. } if server == "ngircd" => ("ngircd".into(), params),
        _ => return None,
    };
    let c = params.get("connections")?.parse().ok()?;
    Some((name, c))
}

/// Whether the run holds chat points at two connection counts or more.
pub(crate) fn applies(points: &[PointData]) -> bool {
    let mut counts: Vec<u64> = points
        .iter()
        .filter_map(series)
        .map(|(_, c)| c as u64)
        .collect();
    counts.sort_unstable();
    counts.dedup();
    counts.len() >= 2
}

fn lines(points: &[PointData], value: impl Fn(&PointData) -> Option<f64>) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    for p in points {
        let Some((name, c)) = series(p) else { continue };
        let Some(v) = value(p).filter(|v| v.is_finite()) else {
            continue;
        };
        let xy = Xy {
            x: c,
            y: v,
            err: None,
        };
        match out.iter_mut().find(|l| l.label == name) {
            Some(l) => l.points.push(xy),
            None => out.push(Line {
                label: name,
                points: vec![xy],
            }),
        }
    }
    for l in &mut out {
        l.points.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
    out
}

fn chart(name: &str, title: &str, caption: &str, y: &str, lines: Vec<Line>) -> ChartSpec {
    ChartSpec {
        name: name.into(),
        program: GROUP.into(),
        title: title.into(),
        caption: caption.into(),
        plot: Plot::Lines(LinePlot {
            title: title.into(),
            x_desc: "connections (rooms of 20)".into(),
            y_desc: y.into(),
            x_scale: Scale::Log,
            y_scale: Scale::LinearFromZero,
            x_ticks_at_data: true,
            lines,
            ideal: None,
        }),
    }
}

/// The chat charts of `points`.
pub(crate) fn specs(points: &[PointData]) -> Vec<ChartSpec> {
    let extra = |k: &'static str| move |p: &PointData| p.summary.extras.get(k).copied();
    vec![
        chart(
            "chat-messages",
            "Messages delivered per second against connections",
            "VolanoMark's score: every (message, member) arrival counts once; medians over \
             samples; a line per model of smtlab's chat server and ngircd on the same CPUs.",
            "messages delivered/s",
            lines(points, |p| p.summary.summary.as_ref().map(|s| s.median)),
        ),
        chart(
            "chat-kernel-per-message",
            "Kernel time per message against connections",
            "The server's system CPU time over the message phase (every thread, set-up and \
             tear-down excluded) per delivered message: the OS cost Luo & John saw grow with \
             connections.",
            "server sys µs per message",
            lines(points, extra(chat::SERVER_SYS_US_PER_MSG)),
        ),
        chart(
            "chat-user-per-message",
            "User time per message against connections",
            "The server's user CPU time over the message phase per delivered message.",
            "server user µs per message",
            lines(points, extra(chat::SERVER_USER_US_PER_MSG)),
        ),
        chart(
            "chat-memory-per-connection",
            "Server memory per connection",
            "The server's PSS growth from its start to the end of the messages, over the \
             connections (thread stacks for the thread models).",
            "KiB of PSS per connection",
            lines(points, extra(chat::SERVER_PSS_KB_PER_CONNECTION)),
        ),
    ]
}
