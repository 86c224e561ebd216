//! A measured point's values as the study tables read them: its median,
//! one of its extras, a number cell, and the note a server point's row
//! carries when its figure is no server's measure. The web, chat and
//! communication findings each wrote these out; they are the same reading.

use smtlab_analyse::analysis::PointData;
use smtlab_types::extras::server;

/// The point's median, `None` when no sample succeeded.
pub(crate) fn median(p: &PointData) -> Option<f64> {
    p.summary.summary.as_ref().map(|s| s.median)
}

/// One of the point's extras (its median over the samples).
pub(crate) fn extra(p: &PointData, key: &str) -> Option<f64> {
    p.summary.extras.get(key).copied()
}

/// A table cell: `v` with `digits` decimals, `-` when not measured.
pub(crate) fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

/// Why a server point's figure is not the server's measure: no sample
/// succeeded, or the load generator's CPUs were saturated (its figure is
/// the client's limit, a lower bound of the server's); `None` otherwise.
pub(crate) fn server_note(p: &PointData) -> Option<String> {
    if p.summary.summary.is_none() {
        Some("no successful sample".to_string())
    } else if client_bound(p) {
        Some("client-bound: a lower bound".to_string())
    } else {
        None
    }
}

/// Whether the load generator's CPUs were saturated at this point (in
/// most of its samples): its figure is the client's limit.
pub(crate) fn client_bound(p: &PointData) -> bool {
    extra(p, server::CLIENT_BOUND).is_some_and(|b| b >= 0.5)
}

/// The load generator's CPU share, as a table cell (`87%`, `-`).
pub(crate) fn client_share(p: &PointData) -> String {
    extra(p, server::CLIENT_CPU_SHARE).map_or("-".into(), |s| format!("{:.0}%", s * 100.0))
}
