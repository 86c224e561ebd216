//! The placement map: where the workers of each measured configuration
//! were pinned on the run's machine, so a reader sees what a placement
//! meant there (`compact`: the siblings of one core before the next;
//! `scatter`: one PU per core, across packages and NUMA nodes).
//!
//! * Columns: every PU of the machine as the run stored it
//!   (`host.topology`, the topology's JSON), grouped by NUMA node, then
//!   package, then core, by logical index as `smtlab place` prints them;
//!   offline and not-allowed PUs greyed. A pinned CPU the topology lacks
//!   gets a grey column of its own at the right (and a note). Above them,
//!   a band of nodes and one of packages, the coarser on top.
//! * Rows: the distinct CPU sets measured, one per (placement, N), labelled
//!   `compact N=4` (a second set under one label: `(set 2)`), by placement
//!   in plan order, then N; at most [`MAX_ROWS`], a note names the rest.
//! * Cells: how many workers were pinned to the PU; 2 or more is an
//!   oversubscribed PU, its count written.
//!
//! When: whenever the run stored its topology and at least one point was
//! pinned, on any machine. With one NUMA node and no SMT the map tells
//! less, but it still shows which cores each N used and any PU shared, and
//! one rule for every machine keeps a report's charts independent of where
//! it ran. Unpinned points (`none`) get a note, not a row; a run whose
//! topology is missing or unreadable gets a note instead of the map.
//!
//! Uses `draw` and `input`; `write_report` puts the map first among every
//! report's charts (runs, studies, pairs, chat and DSM sweeps alike).

use smtlab_topology::{Pu, Topology};
use smtlab_types::{CpuSet, Point};

use crate::input::ReportInput;
use crate::plot::{GridColumn, GridPlot, GridRow, GridSpan, Plot};

/// The chart's file stem (`charts/placement-map.svg`; `fig-placement-map`
/// in the page).
pub(crate) const NAME: &str = "placement-map";

/// The heading the map comes under in the report.
pub(crate) const GROUP: &str = "Where the workers ran";

/// At most this many rows (distinct CPU sets): a page-high chart.
pub(crate) const MAX_ROWS: usize = 40;

/// The map, ready to become a chart.
#[derive(Debug, Clone)]
pub(crate) struct PlacementMap {
    pub title: String,
    pub caption: String,
    pub plot: Plot,
}

/// The placement map of `input`'s points on its run's machine, if there is
/// one to draw; why not, and what was left out, go to `notes`.
pub(crate) fn placement_map(input: &ReportInput, notes: &mut Vec<String>) -> Option<PlacementMap> {
    let points: Vec<&Point> = input.points.iter().map(|p| &p.summary.point).collect();
    let (map, more) = map_of(&input.run.host.topology, &points);
    notes.extend(more);
    map
}

/// One distinct CPU set measured: a row.
#[derive(Debug, Clone, PartialEq)]
struct CpuSetRow {
    placement: String,
    workers: usize,
    /// Worker k's PU at k, sorted (the order does not show in a count).
    cpus: Vec<u32>,
}

/// The map of `points` on the machine `topology` (its JSON), and notes.
fn map_of(topology: &serde_json::Value, points: &[&Point]) -> (Option<PlacementMap>, Vec<String>) {
    let mut notes = Vec::new();
    if points.is_empty() {
        return (None, notes);
    }
    let (sets, unpinned) = cpu_sets(points);
    if !unpinned.is_empty() {
        let mut placements: Vec<&str> = Vec::new();
        for p in &unpinned {
            if !placements.contains(&p.placement.as_str()) {
                placements.push(&p.placement);
            }
        }
        notes.push(format!(
            "Placement map: {} point(s) ran unpinned (placement {}), so the scheduler chose \
             their CPUs; they have no row.",
            unpinned.len(),
            placements.join(", ")
        ));
    }
    if sets.is_empty() {
        notes.push(
            "No placement map: no point was pinned to CPUs, so there is nothing to place.".into(),
        );
        return (None, notes);
    }
    if topology.is_null() {
        notes.push("No placement map: the run's host facts hold no topology.".into());
        return (None, notes);
    }
    let topo = match serde_json::from_value::<Topology>(topology.clone()) {
        Ok(t) => t,
        Err(e) => {
            notes.push(format!(
                "No placement map: the run's stored topology could not be read ({e})."
            ));
            return (None, notes);
        }
    };

    let (shown, left_out) = sets.split_at(sets.len().min(MAX_ROWS));
    if !left_out.is_empty() {
        let names: Vec<String> = left_out.iter().take(6).map(row_label).collect();
        let rest = left_out.len() - names.len();
        notes.push(format!(
            "Placement map: {} more CPU set(s) are not drawn (the map has at most {MAX_ROWS} \
             rows): {}{}; every point's CPUs are in the per-point table.",
            left_out.len(),
            names.join(", "),
            if rest > 0 {
                format!(" and {rest} more")
            } else {
                String::new()
            }
        ));
    }
    let mut missing: Vec<u32> = shown
        .iter()
        .flat_map(|r| r.cpus.iter().copied())
        .filter(|c| topo.pu(*c).is_none())
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if !missing.is_empty() {
        let list: CpuSet = missing.iter().copied().collect();
        notes.push(format!(
            "Placement map: CPU(s) {list} were pinned but are not in the run's stored topology; \
             they are the grey columns at the right."
        ));
    }

    let (columns, bands, os_of) = columns(&topo, &missing);
    let rows = rows(shown, &os_of);
    let greyed = columns.iter().any(|c| c.unavailable);
    let title = "Where each configuration's workers were pinned".to_string();
    let plot = Plot::Grid(GridPlot {
        title: title.clone(),
        x_desc: "PUs of the machine, by NUMA node, package and core".into(),
        columns,
        bands,
        rows,
        one_label: "1 worker on the PU".into(),
        many_label: "2 or more (the count)".into(),
        unavailable_label: "PU offline, not allowed or unknown".into(),
    });
    let mut caption = "Each row is a measured configuration (placement and number of workers N) \
                       and each column a PU of this machine, grouped by NUMA node, package and \
                       core (cores shaded in turn); a filled cell is a PU a worker of that \
                       configuration was pinned to, a number the workers sharing it."
        .to_string();
    if greyed {
        caption.push_str(" Grey columns are PUs that were offline, not allowed or unknown.");
    }
    (
        Some(PlacementMap {
            title,
            caption,
            plot,
        }),
        notes,
    )
}

/// The distinct CPU sets of the pinned points, by placement (in order of
/// first appearance), then N; and the unpinned points.
fn cpu_sets<'a>(points: &[&'a Point]) -> (Vec<CpuSetRow>, Vec<&'a Point>) {
    let mut placements: Vec<&str> = Vec::new();
    let mut sets: Vec<CpuSetRow> = Vec::new();
    let mut unpinned = Vec::new();
    for &p in points {
        let Some(cpus) = p.cpus.as_ref().filter(|c| !c.is_empty()) else {
            unpinned.push(p);
            continue;
        };
        let mut cpus = cpus.clone();
        cpus.sort_unstable();
        let row = CpuSetRow {
            placement: p.placement.clone(),
            workers: p.workers,
            cpus,
        };
        if !sets.contains(&row) {
            if !placements.contains(&p.placement.as_str()) {
                placements.push(&p.placement);
            }
            sets.push(row);
        }
    }
    let rank = |r: &CpuSetRow| placements.iter().position(|p| *p == r.placement);
    // Stable: sets of one (placement, N) stay in plan order.
    sets.sort_by_key(|r| (rank(r), r.workers));
    (sets, unpinned)
}

fn row_label(r: &CpuSetRow) -> String {
    format!("{} N={}", r.placement, r.workers)
}

/// The rows: each set's workers counted per column (`os_of[k]` is column
/// k's PU), a repeated label numbered.
fn rows(sets: &[CpuSetRow], os_of: &[u32]) -> Vec<GridRow> {
    let mut out: Vec<GridRow> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for set in sets {
        let base = row_label(set);
        let k = seen.iter().filter(|l| **l == base).count();
        seen.push(base.clone());
        let label = if k == 0 {
            base
        } else {
            format!("{base} (set {})", k + 1)
        };
        let counts = os_of
            .iter()
            .map(|os| set.cpus.iter().filter(|c| *c == os).count() as u32)
            .collect();
        out.push(GridRow { label, counts });
    }
    out
}

/// `node 0 / core 1 / PU 3`, with why it is greyed.
fn pu_label(p: &Pu) -> String {
    let mut parts = Vec::new();
    if let Some(n) = p.numa {
        parts.push(format!("node {n}"));
    }
    if let Some(c) = p.core {
        parts.push(format!("core {c}"));
    }
    parts.push(format!("PU {}", p.os_index));
    let mut label = parts.join(" / ");
    if !p.online {
        label.push_str(" (offline)");
    } else if !p.allowed {
        label.push_str(" (not allowed)");
    }
    label
}

/// Runs of equal keys as spans; an empty key is an unlabelled span.
fn spans(keys: &[String]) -> Vec<GridSpan> {
    let mut out: Vec<GridSpan> = Vec::new();
    for (k, key) in keys.iter().enumerate() {
        match out.last_mut() {
            Some(s) if s.label == *key => s.len += 1,
            _ => out.push(GridSpan {
                label: key.clone(),
                first: k,
                len: 1,
            }),
        }
    }
    out
}

/// The columns: every PU of `t` by (NUMA node, package, core, OS index),
/// then the `missing` CPUs; the bands (nodes, packages, where known); and
/// each column's PU.
fn columns(t: &Topology, missing: &[u32]) -> (Vec<GridColumn>, Vec<Vec<GridSpan>>, Vec<u32>) {
    let mut pus: Vec<&Pu> = t.pus.iter().collect();
    let last = usize::MAX;
    pus.sort_by_key(|p| {
        (
            p.numa.unwrap_or(last),
            p.package.unwrap_or(last),
            p.core.unwrap_or(last),
            p.os_index,
        )
    });
    let mut columns: Vec<GridColumn> = pus
        .iter()
        .map(|p| GridColumn {
            label: pu_label(p),
            group: p.core,
            unavailable: !p.online || !p.allowed,
        })
        .collect();
    let mut nodes: Vec<String> = pus
        .iter()
        .map(|p| p.numa.map(|n| format!("node {n}")).unwrap_or_default())
        .collect();
    let mut packages: Vec<String> = pus
        .iter()
        .map(|p| {
            p.package
                .map(|k| format!("package {k}"))
                .unwrap_or_default()
        })
        .collect();
    let mut os_of: Vec<u32> = pus.iter().map(|p| p.os_index).collect();
    for &c in missing {
        columns.push(GridColumn {
            label: format!("PU {c} (not in the topology)"),
            group: None,
            unavailable: true,
        });
        nodes.push(String::new());
        packages.push(String::new());
        os_of.push(c);
    }
    let mut bands: Vec<Vec<GridSpan>> = [nodes, packages]
        .into_iter()
        .filter(|keys| keys.iter().any(|k| !k.is_empty()))
        .map(|keys| spans(&keys))
        .collect();
    // The coarser band on top, with the heavier rules: packages over the
    // nodes they hold (sub-NUMA clustering), nodes over packages
    // otherwise; stable, so nodes first when they match.
    bands.sort_by_key(|b| b.iter().filter(|s| !s.label.is_empty()).count());
    (columns, bands, os_of)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use smtlab_types::{Metric, Mode, Model, Program, Spawn};

    /// 2 packages x 1 NUMA node x 2 cores x 2 PUs, as the CLI stores a
    /// run's machine (`serde_json::to_value` of the topology).
    fn machine() -> serde_json::Value {
        let t = smtlab_topology::synthetic::parse("package:2 numa:1 core:2 pu:2").unwrap();
        serde_json::to_value(&t).unwrap()
    }

    fn point(index: usize, placement: &str, cpus: Option<Vec<u32>>) -> Point {
        Point {
            index,
            program: Program::Builtin {
                workload: "kv".into(),
                params: BTreeMap::new(),
            },
            model: Model::Thread,
            spawn: Spawn::Exec,
            placement: placement.into(),
            workers: cpus.as_ref().map_or(2, Vec::len),
            cpus,
            oversubscription: 1.0,
            alloc: "glibc".into(),
            mode: Mode::FixedTime { seconds: 1.0 },
            metric: Metric {
                name: "ops_per_s".into(),
                unit: "ops/s".into(),
                higher_is_better: true,
            },
        }
    }

    fn grid(map: &Option<PlacementMap>) -> &GridPlot {
        match &map.as_ref().expect("a map").plot {
            Plot::Grid(g) => g,
            other => panic!("not a grid: {other:?}"),
        }
    }

    /// The row labelled `label`, as one count per column.
    fn counts<'a>(g: &'a GridPlot, label: &str) -> &'a [u32] {
        &g.rows
            .iter()
            .find(|r| r.label == label)
            .unwrap_or_else(|| panic!("no row {label}: {:?}", g.rows))
            .counts
    }

    #[test]
    fn columns_are_grouped_by_node_package_and_core() {
        let pts = [point(0, "compact", Some(vec![0]))];
        let refs: Vec<&Point> = pts.iter().collect();
        let (map, notes) = map_of(&machine(), &refs);
        assert!(notes.is_empty(), "{notes:?}");
        let g = grid(&map);
        let labels: Vec<&str> = g.columns.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "node 0 / core 0 / PU 0",
                "node 0 / core 0 / PU 1",
                "node 0 / core 1 / PU 2",
                "node 0 / core 1 / PU 3",
                "node 1 / core 2 / PU 4",
                "node 1 / core 2 / PU 5",
                "node 1 / core 3 / PU 6",
                "node 1 / core 3 / PU 7",
            ]
        );
        let groups: Vec<Option<usize>> = g.columns.iter().map(|c| c.group).collect();
        assert_eq!(
            groups,
            [0, 0, 1, 1, 2, 2, 3, 3].map(Some),
            "a core's siblings are one group"
        );
        assert!(g.columns.iter().all(|c| !c.unavailable));
        let span = |label: &str, first, len| GridSpan {
            label: label.into(),
            first,
            len,
        };
        assert_eq!(
            g.bands,
            vec![
                vec![span("node 0", 0, 4), span("node 1", 4, 4)],
                vec![span("package 0", 0, 4), span("package 1", 4, 4)],
            ]
        );
    }

    #[test]
    fn packages_holding_nodes_are_the_top_band() {
        // Sub-NUMA clustering: two nodes in each package.
        let t = smtlab_topology::synthetic::parse("package:2 numa:2 core:1 pu:2").unwrap();
        let pts = [point(0, "scatter", Some(vec![0, 2, 4, 6]))];
        let refs: Vec<&Point> = pts.iter().collect();
        let (map, _) = map_of(&serde_json::to_value(&t).unwrap(), &refs);
        let g = grid(&map);
        let labels = |b: &[GridSpan]| b.iter().map(|s| s.label.clone()).collect::<Vec<_>>();
        assert_eq!(labels(&g.bands[0]), ["package 0", "package 1"]);
        assert_eq!(
            labels(&g.bands[1]),
            ["node 0", "node 1", "node 2", "node 3"]
        );
        assert_eq!(g.columns[2].label, "node 1 / core 1 / PU 2");
        assert_eq!(counts(g, "scatter N=4"), [1, 0, 1, 0, 1, 0, 1, 0]);
    }

    #[test]
    fn rows_are_the_distinct_cpu_sets_with_their_counts() {
        // What `smtlab_topology::placement` puts on this machine for
        // compact, scatter and an explicit list at N = 1, 2, 4, 12 (12:
        // oversubscribed, wrapping around), each measured by two models:
        // one row per CPU set, not per point.
        let topo = smtlab_topology::synthetic::parse("package:2 numa:1 core:2 pu:2").unwrap();
        let mut pts = Vec::new();
        for model in [Model::Thread, Model::Process] {
            for placement in ["compact", "scatter", "0,0,1"] {
                let policy = placement.parse().unwrap();
                for n in [1, 2, 4, 12] {
                    let placed = smtlab_topology::placement::place(&topo, &policy, n).unwrap();
                    let mut p = point(pts.len(), placement, placed.cpus);
                    p.model = model;
                    pts.push(p);
                }
            }
        }
        let refs: Vec<&Point> = pts.iter().collect();
        let (map, notes) = map_of(&machine(), &refs);
        assert!(notes.is_empty(), "{notes:?}");
        let g = grid(&map);
        let labels: Vec<&str> = g.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "compact N=1",
                "compact N=2",
                "compact N=4",
                "compact N=12",
                "scatter N=1",
                "scatter N=2",
                "scatter N=4",
                "scatter N=12",
                "0,0,1 N=1",
                "0,0,1 N=2",
                "0,0,1 N=4",
                "0,0,1 N=12",
            ]
        );
        // compact: one core's siblings, then the next core of the node.
        assert_eq!(counts(g, "compact N=2"), [1, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(counts(g, "compact N=4"), [1, 1, 1, 1, 0, 0, 0, 0]);
        // scatter: one PU per core, over both packages and nodes.
        assert_eq!(counts(g, "scatter N=2"), [1, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(counts(g, "scatter N=4"), [1, 0, 1, 0, 1, 0, 1, 0]);
        // Oversubscribed PUs count their workers.
        assert_eq!(counts(g, "compact N=12"), [2, 2, 2, 2, 1, 1, 1, 1]);
        assert_eq!(counts(g, "0,0,1 N=4"), [3, 1, 0, 0, 0, 0, 0, 0]);
        assert!(map.unwrap().caption.contains("grouped by NUMA node"));
    }

    #[test]
    fn the_stored_json_document_reads_too() {
        // `smtlab topology --json`'s document: the same fields under a
        // schema tag.
        let mut doc = machine();
        doc["schema"] = "smtlab.topology/1".into();
        doc["summary"] = "2 packages, 4 cores, 8 PUs".into();
        let pts = [point(0, "scatter", Some(vec![0, 4]))];
        let refs: Vec<&Point> = pts.iter().collect();
        let (map, _) = map_of(&doc, &refs);
        assert_eq!(grid(&map).columns.len(), 8);
    }

    #[test]
    fn an_unpinned_point_is_a_note_not_a_row() {
        let pts = [
            point(0, "none", None),
            point(1, "compact", Some(vec![0, 1])),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        let (map, notes) = map_of(&machine(), &refs);
        assert_eq!(grid(&map).rows.len(), 1);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("1 point(s) ran unpinned (placement none)"),
            "{notes:?}"
        );

        // Nothing pinned: no map, and the notes say why.
        let (map, notes) = map_of(&machine(), &refs[..1]);
        assert!(map.is_none());
        assert!(notes.iter().any(|n| n.starts_with("No placement map")));
        // No points at all: nothing to say.
        let (map, notes) = map_of(&machine(), &[]);
        assert!(map.is_none() && notes.is_empty());
    }

    #[test]
    fn without_a_topology_a_note_says_why() {
        let pts = [point(0, "compact", Some(vec![0]))];
        let refs: Vec<&Point> = pts.iter().collect();
        for topo in [
            serde_json::Value::Null,
            serde_json::json!({"packages": 1, "pus": [0, 1]}),
        ] {
            let (map, notes) = map_of(&topo, &refs);
            assert!(map.is_none());
            assert_eq!(notes.len(), 1, "{notes:?}");
            assert!(
                notes[0].starts_with("No placement map: the run's"),
                "{notes:?}"
            );
        }
    }

    #[test]
    fn offline_unknown_and_too_many_are_marked() {
        let mut topo = machine();
        // PU 7 offline, PU 6 not allowed.
        topo["pus"][7]["online"] = false.into();
        topo["pus"][7]["allowed"] = false.into();
        topo["pus"][6]["allowed"] = false.into();
        let mut pts: Vec<Point> = (1..=MAX_ROWS + 3)
            .map(|n| point(n, "spread", Some((0..n as u32).map(|k| k % 6).collect())))
            .collect();
        pts.push(point(0, "9", Some(vec![9])));
        let refs: Vec<&Point> = pts.iter().collect();
        let (map, notes) = map_of(&topo, &refs);
        let g = grid(&map);
        assert_eq!(g.rows.len(), MAX_ROWS);
        let unavailable: Vec<&str> = g
            .columns
            .iter()
            .filter(|c| c.unavailable)
            .map(|c| c.label.as_str())
            .collect();
        assert_eq!(
            unavailable,
            [
                "node 1 / core 3 / PU 6 (not allowed)",
                "node 1 / core 3 / PU 7 (offline)"
            ]
        );
        // Row 40 is spread N=40: 40 workers over 6 PUs.
        assert_eq!(
            counts(g, "spread N=40"),
            [7, 7, 7, 7, 6, 6, 0, 0],
            "oversubscription is a count"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("4 more CPU set(s) are not drawn")
                    && n.contains("spread N=41, spread N=42, spread N=43, 9 N=1")),
            "{notes:?}"
        );
        assert!(map.unwrap().caption.contains("Grey columns"));

        // A pinned CPU the topology lacks: a column of its own.
        let (map, notes) = map_of(&topo, &refs[MAX_ROWS + 2..]);
        let g = grid(&map);
        let last = g.columns.last().unwrap();
        assert_eq!(last.label, "PU 9 (not in the topology)");
        assert!(last.unavailable);
        assert_eq!(counts(g, "9 N=1").last(), Some(&1));
        assert_eq!(g.bands[0].last().unwrap().label, "");
        assert!(
            notes.iter().any(|n| n.contains("CPU(s) 9 were pinned")),
            "{notes:?}"
        );
    }

    #[test]
    fn a_repeated_label_is_numbered() {
        let pts = [
            point(0, "compact", Some(vec![0, 1])),
            point(1, "compact", Some(vec![4, 5])),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        let (map, _) = map_of(&machine(), &refs);
        let labels: Vec<String> = grid(&map).rows.iter().map(|r| r.label.clone()).collect();
        assert_eq!(labels, ["compact N=2", "compact N=2 (set 2)"]);
    }

    #[test]
    fn the_map_draws() {
        let pts = [
            point(0, "compact", Some(vec![0, 1, 2, 3])),
            point(1, "scatter", Some(vec![0, 4, 2, 6])),
            point(2, "0,0", Some(vec![0, 0])),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        let (map, _) = map_of(&machine(), &refs);
        let plot = map.unwrap().plot.cleaned();
        let svg = crate::draw::render_svg(&plot).unwrap();
        // To look at: SMTLAB_PLACEMENT_PREVIEW=/tmp/map writes map.svg, .png.
        let dir = tempfile::tempdir().unwrap();
        let stem = std::env::var("SMTLAB_PLACEMENT_PREVIEW")
            .unwrap_or_else(|_| dir.path().join("map").display().to_string());
        std::fs::write(format!("{stem}.svg"), &svg).unwrap();
        crate::draw::render_png(&plot, std::path::Path::new(&format!("{stem}.png"))).unwrap();
        for text in [
            "node 1 / core 3 / PU 7",
            "package 1",
            "scatter N=4",
            ">\n2\n<",
        ] {
            assert!(svg.contains(text), "{text} not in the SVG");
        }
    }
}
