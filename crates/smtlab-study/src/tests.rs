use super::*;
use smtlab_allocators::Allocator;
use smtlab_topology::{synthetic, Topology};
use smtlab_types::{Mode, Model, Point, RunSpec};

fn topo(spec: &str) -> Topology {
    synthetic::parse(spec).expect("valid synthetic spec")
}

/// What a command line without study flags asks for.
fn request() -> StudyRequest {
    StudyRequest {
        seed: 7,
        ..StudyRequest::default()
    }
}

fn plan_of(kind: StudyKind, spec: &str) -> (RunSpec, Vec<Point>) {
    let p = plan(kind, &topo(spec), request()).expect("plans");
    (p.spec, p.points)
}

fn meta(spec: &RunSpec) -> &StudyMeta {
    spec.study.as_ref().expect("a study sets its meta")
}

#[test]
fn pinning_on_an_smt8_core_lays_out_the_two_placements_of_t2() {
    // UltraSPARC T2-like: 8 cores of 8 PUs.
    let (spec, points) = plan_of(StudyKind::Pinning, "core:8 pu:8");
    assert!(meta(&spec).limits.is_empty(), "{:?}", meta(&spec).limits);
    assert_eq!(spec.placements, vec!["compact", "core"]);
    assert_eq!(spec.threads, vec![8]);
    let t = topo("core:8 pu:8");
    for p in points.iter().filter(|p| p.program.label() == "jbb") {
        let cpus = p.cpus.clone().expect("pinned");
        let cores: Vec<usize> = cpus
            .iter()
            .map(|&c| t.pu(c).and_then(|pu| pu.core).expect("known PU"))
            .collect();
        match p.placement.as_str() {
            "compact" => assert!(cores.iter().all(|&c| c == 0), "{cores:?}"),
            "core" => {
                let mut distinct = cores.clone();
                distinct.dedup();
                assert_eq!(distinct, (0..8).collect::<Vec<_>>());
            }
            other => panic!("unexpected placement {other}"),
        }
    }
}

#[test]
fn pinning_without_smt_says_so_and_runs_what_it_can() {
    let (spec, points) = plan_of(StudyKind::Pinning, "core:2 pu:1");
    let limits = &meta(&spec).limits;
    assert_eq!(limits.len(), 1);
    assert!(limits[0].contains("no SMT"), "{limits:?}");
    assert!(limits[0].contains("2 or more PUs per core"));
    assert_eq!(spec.placements, vec!["compact"]);
    assert!(points.iter().all(|p| p.workers == 1));
}

#[test]
fn smt_study_stays_on_one_core_in_both_models() {
    let t = topo("core:4 pu:2");
    let (spec, points) = plan_of(StudyKind::Smt, "core:4 pu:2");
    assert_eq!(spec.threads, vec![1, 2]);
    assert_eq!(spec.models, vec![Model::Thread, Model::Process]);
    for p in &points {
        for c in p.cpus.as_ref().expect("pinned") {
            assert_eq!(t.pu(*c).and_then(|pu| pu.core), Some(0));
        }
    }
    let (spec, _) = plan_of(StudyKind::Smt, "core:2 pu:1");
    assert!(meta(&spec).limits[0].contains("SMT scalability"));
}

#[test]
fn models_on_a_two_core_machine_measures_scatter_once() {
    let (spec, points) = plan_of(StudyKind::Models, "core:2 pu:1");
    assert_eq!(spec.placements, vec!["compact"]);
    assert_eq!(spec.threads, vec![1, 2]);
    assert!(meta(&spec).notes[0].starts_with("scatter picks the same CPUs as compact"));
    // 4 default programs x 2 models x 2 N.
    assert_eq!(points.len(), 16);
    let (spec, _) = plan_of(StudyKind::Models, "package:2 core:4 pu:2");
    assert_eq!(spec.placements, vec!["compact", "scatter"]);
    assert_eq!(spec.threads, (1..=16).collect::<Vec<_>>());
}

#[test]
fn cores_study_on_a_big_machine_uses_a_ladder_and_one_pu_per_core() {
    // POWER7-sized: 4 packages x 8 cores x 4 PUs = 128 PUs.
    let t = topo("package:4 core:8 pu:4");
    let (spec, points) = plan_of(StudyKind::Cores, "package:4 core:8 pu:4");
    assert_eq!(spec.threads, vec![1, 2, 4, 8, 16, 32]);
    for p in &points {
        let cpus = p.cpus.as_ref().expect("pinned");
        let mut cores: Vec<usize> = cpus.iter().filter_map(|&c| t.pu(c)?.core).collect();
        cores.sort_unstable();
        cores.dedup();
        assert_eq!(cores.len(), p.workers, "one PU per core");
    }
    let err = plan(
        StudyKind::Cores,
        &t,
        StudyRequest {
            threads: Some(vec![33]),
            ..request()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("32 usable cores"), "{err}");
}

#[test]
fn oversub_goes_to_four_times_the_pus_unpinned() {
    let (spec, points) = plan_of(StudyKind::Oversub, "core:2 pu:1");
    assert_eq!(spec.threads, vec![1, 2, 4, 8]);
    assert_eq!(spec.placements, vec!["none"]);
    assert!(points.iter().all(|p| p.cpus.is_none()));
    assert_eq!(points.last().map(|p| p.oversubscription), Some(4.0));
    assert_eq!(oversub_ladder(6), vec![1, 2, 4, 6, 8, 16, 24]);
}

#[test]
fn ladders() {
    assert_eq!(ladder(1), vec![1]);
    assert_eq!(ladder(16), (1..=16).collect::<Vec<_>>());
    assert_eq!(ladder(256), vec![1, 2, 4, 8, 16, 32, 64, 128, 256]);
    assert_eq!(ladder(48), vec![1, 2, 4, 8, 16, 32, 48]);
}

#[test]
fn the_tour_on_a_two_core_machine_names_what_it_cannot_show() {
    let (spec, points) = plan_of(StudyKind::Tour, "core:2 pu:1");
    let m = meta(&spec);
    assert!(m.limits.iter().any(|l| l.contains("no SMT")));
    assert_eq!(points.len(), 16);
    assert!(spec.programs.iter().any(|p| p.label() == "jbb"));
}

#[test]
fn study_names_parse_and_unknown_ones_are_refused() {
    for n in StudyKind::named().map(StudyKind::name) {
        assert_eq!(n.parse::<StudyKind>().map(|k| k.name()), Ok(n));
    }
    let err = "smtt".parse::<StudyKind>().unwrap_err().to_string();
    assert!(
        err.contains("study `smtt`") && err.contains("pinning"),
        "{err}"
    );
}

#[test]
fn alloc_study_compares_allocators_at_every_pu_and_lists_missing_ones() {
    let t = topo("core:2 pu:1");
    // Given allocators are taken as found (the command line found them).
    let given = ["glibc", "jemalloc-percpu"].map(|name| Allocator {
        name: name.to_string(),
        preload: None,
    });
    let req = StudyRequest {
        allocators: Some(given.to_vec()),
        ..request()
    };
    let StudyPlan { spec, points, .. } = plan(StudyKind::Alloc, &t, req).unwrap();
    assert_eq!(spec.threads, vec![2]);
    assert_eq!(spec.mode, Some(Mode::FixedTime { seconds: 0.5 }));
    // jbb, 5 benchmarks, allocprobe pinned and migrating; 2 allocators; 2 models.
    assert_eq!(points.len(), 8 * 2 * 2);
    let labels: Vec<String> = spec.programs.iter().map(|p| p.label()).collect();
    assert!(
        labels.contains(&"allocprobe migrate=1".to_string()),
        "{labels:?}"
    );
    // Without --alloc: every known allocator, installed or named as missing.
    let spec = plan(StudyKind::Alloc, &t, request()).unwrap().spec;
    let missing = meta(&spec)
        .limits
        .iter()
        .find(|l| l.starts_with("Not installed"));
    for a in smtlab_allocators::ALLOCATORS {
        let measured = spec.allocs.iter().any(|x| x == a.name);
        let listed = missing.is_some_and(|l| l.contains(a.name));
        assert!(
            measured != listed,
            "{} measured {measured}, listed {listed}",
            a.name
        );
    }
    assert!(spec.allocs.contains(&"glibc".to_string()));
}
