//! Points stored before a server's `--client-cpus` was typed (a `CpuSet`
//! beside its parameters, not a parameter's text) and its name a
//! `ServerKind`: they read into the typed program and are written back
//! byte for byte, and a program built typed is stored as it always was.

use std::collections::BTreeMap;

use smtlab_types::cpuset::CpuSet;
use smtlab_types::{Point, Program, ServerKind};

/// One point per kind of program, written by the types as they were
/// before (`server` a `String`, `client_cpus` among the `params`).
const BEFORE: &str = include_str!("fixtures/points_before_typed_params.jsonl");

#[test]
fn stored_points_read_typed_and_write_back_byte_for_byte() {
    for line in BEFORE.lines() {
        let point: Point = serde_json::from_str(line).unwrap();
        assert_eq!(serde_json::to_string(&point).unwrap(), line);
    }
}

#[test]
fn a_servers_client_cpus_reads_as_the_set_and_is_stored_as_its_list() {
    let first = BEFORE.lines().next().unwrap();
    let point: Point = serde_json::from_str(first).unwrap();
    let Program::Server {
        server,
        params,
        client_cpus,
    } = &point.program
    else {
        panic!("the fixture's first point is a server: {first}");
    };
    assert_eq!(*server, ServerKind::Web);
    assert_eq!(
        client_cpus.as_ref(),
        Some(&CpuSet::parse_list("2-3").unwrap())
    );
    // The set is not also a parameter: nothing downstream parses it.
    assert!(!params.contains_key("client_cpus"), "{params:?}");
    // Built typed, it is stored as before, and its stored parameters (the
    // store's parameter column) hold the list.
    let built = Program::Server {
        server: ServerKind::Web,
        params: [("connections", "8"), ("files", "5MB"), ("keepalive", "1")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        client_cpus: Some(CpuSet::parse_list("2,3").unwrap()),
    };
    assert_eq!(built, point.program);
    assert_eq!(
        serde_json::to_string(&built).unwrap(),
        r#"{"kind":"server","server":"web","params":{"client_cpus":"2-3","connections":"8","files":"5MB","keepalive":"1"}}"#
    );
    assert_eq!(
        built.stored_params().unwrap()["client_cpus"],
        "2-3".to_string()
    );
}

#[test]
fn a_stored_client_cpus_that_is_no_cpu_list_is_refused_not_dropped() {
    let bad = r#"{"kind":"server","server":"chat","params":{"client_cpus":"x"}}"#;
    let e = serde_json::from_str::<Program>(bad)
        .unwrap_err()
        .to_string();
    assert!(e.contains("client_cpus `x`"), "{e}");
}
