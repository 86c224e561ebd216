//! The communication study's two tables, as the paper has them: message
//! statistics, and the time split with the CPU time of each thread, a row
//! per rank count, layout and mechanism.

use smtlab_analyse::analysis::PointData;
use smtlab_analyse::units::table_value;
use smtlab_types::extras::dsm;
use smtlab_types::Table;

use crate::comm_plan::layout_name;
use crate::comm_points::{app_name, comm_of, oversubscribed, per_node, per_rank, ranks, total};
use crate::findings::Findings;
use crate::point_values::{median, num};

/// Seconds with at least three significant digits: a short run's split
/// (tens of microseconds of compute) must not read as `0.000`, which
/// would say that no time was spent.
pub(crate) fn seconds(v: Option<f64>) -> String {
    num(v.map(|v| v.max(0.0)), v.map_or(3, significant_decimals))
}

/// Decimals that show three significant digits of `v` (at least 3, at
/// most 9: below a nanosecond a time is noise).
pub(crate) fn significant_decimals(v: f64) -> usize {
    if v <= 0.0 || !v.is_finite() {
        return 3;
    }
    (2 - v.log10().floor() as i64).clamp(3, 9) as usize
}

/// The row's first cells: ranks, layout (with oversubscription said),
/// mechanism.
pub(crate) fn row_head(p: &PointData) -> Vec<String> {
    let mut layout = layout_name(per_node(p)).to_string();
    if oversubscribed(p) {
        layout.push_str(&format!(
            " (oversubscribed {:.0}x)",
            p.summary.point.oversubscription
        ));
    }
    vec![ranks(p).to_string(), layout, comm_of(p).to_string()]
}

/// The paper's statistics table of one application.
pub(crate) fn statistics_table(app: &str, mine: &[&PointData], f: &mut Findings) {
    let rows = mine
        .iter()
        .map(|p| {
            let mut row = row_head(p);
            row.extend([
                num(total(p, dsm::MESSAGES), 0),
                num(total(p, dsm::BYTES).map(|b| b / 1024.0), 1),
                num(total(p, dsm::GETP), 0),
                num(total(p, dsm::DIFFS), 0),
                num(total(p, dsm::LOCKS), 0),
                num(total(p, dsm::BARRIERS), 0),
                num(total(p, dsm::SERVED), 0),
                num(total(p, dsm::RETRANSMISSIONS), 0),
                num(total(p, dsm::DUPLICATES), 0),
            ]);
            row
        })
        .collect();
    f.tables.push(Table {
        title: format!("{}: communication statistics", app_name(app)),
        columns: [
            "ranks",
            "layout",
            "mechanism",
            "messages",
            "KB",
            "GETP",
            "diffs",
            "locks",
            "barriers",
            "served",
            "retransmissions",
            "duplicates",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: Some(
            "per sample, summed over the ranks, medians over the samples; messages and KB sent \
             (each datagram once, acknowledgements included); GETP: pages fetched from their \
             home; diffs sent to homes; locks acquired; barriers passed by each rank; served: \
             requests a rank served for the others; retransmissions after a timeout and \
             duplicates dropped by the receiver"
                .to_string(),
        ),
    });
}

/// The paper's time-split table of one application.
pub(crate) fn time_table(app: &str, mine: &[&PointData], f: &mut Findings) {
    let rows = mine
        .iter()
        .map(|p| {
            let r = &p.summary;
            let unit = r.point.metric.unit.as_str();
            let mut row = row_head(p);
            let ci = r
                .summary
                .as_ref()
                .and_then(|s| s.ci95)
                .map_or("-".to_string(), |(lo, hi)| {
                    format!("[{}, {}]", table_value(lo, unit), table_value(hi, unit))
                });
            let note = if r.summary.is_none() {
                "no successful sample".to_string()
            } else if r.failed > 0 {
                format!("{} failed: {}", r.failed, r.failures.join("; "))
            } else {
                String::new()
            };
            row.extend([
                median(p).map_or("failed".to_string(), |m| table_value(m, unit)),
                ci,
                seconds(per_rank(p, dsm::COMPUTE_S)),
                seconds(per_rank(p, dsm::FAULT_S)),
                seconds(per_rank(p, dsm::SYNC_S)),
                seconds(per_rank(p, dsm::SERVE_S)),
                seconds(per_rank(p, dsm::WAIT_S)),
                seconds(per_rank(p, dsm::THREAD_MAIN_S)),
                seconds(per_rank(p, dsm::THREAD_COMM_S)),
                seconds(per_rank(p, dsm::THREAD_SEND_S)),
                seconds(per_rank(p, dsm::THREAD_RECV_S)),
                seconds(per_rank(p, dsm::THREAD_SERVE_S)),
                note,
            ]);
            row
        })
        .collect();
    f.tables.push(Table {
        title: format!(
            "{}: wall time and where each rank's time went",
            app_name(app)
        ),
        columns: [
            "ranks",
            "layout",
            "mechanism",
            "wall time",
            "95% CI",
            "compute s",
            "SEGV s",
            "sync s",
            "serve s",
            "wait s",
            "main CPU s",
            "comm CPU s",
            "send CPU s",
            "recv CPU s",
            "serve thread CPU s",
            "note",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: Some(
            "wall time: the parallel section, median over the samples with its bootstrap 95% \
             interval; then seconds per rank on average (medians over the samples): compute = \
             the application's own work, SEGV = in the page-fault handler (page fetches, \
             twins), sync = in locks and barriers, serve = serving others' requests on the \
             computing thread (sigio's handler, poll's checks), wait = blocked for a reply \
             (inside SEGV and sync, counted there too); the CPU seconds of each thread of the \
             thread mechanisms (thr1: comm; thr2: send, recv; thr3: send, recv, serve)"
                .to_string(),
        ),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_seconds_keep_three_significant_digits() {
        assert_eq!(seconds(Some(1.23456)), "1.235");
        assert_eq!(seconds(Some(0.0123456)), "0.0123");
        // Tens of microseconds of compute in a short run are not 0.000.
        assert_eq!(seconds(Some(0.0000123456)), "0.0000123");
        assert_eq!(seconds(Some(0.0)), "0.000");
        assert_eq!(seconds(Some(1e-15)), "0.000000000");
        assert_eq!(seconds(None), "-");
    }
}
