//! The architecture, checked: what ARCHITECTURE.md says about who may use
//! whom is what the code does.
//!
//! * Crates: every `smtlab*` dependency of a crate (normal, dev and build)
//!   is one its row of ARCHITECTURE.md's codemap allows, and every crate a
//!   row allows sits on a lower layer. Cargo enforces the rest (a crate can
//!   only name crates it depends on), so no crate can use one above it.
//! * Modules: inside each crate, no two modules use each other, directly or
//!   around a loop (`use crate::x` and `super::x` references outside test
//!   code, and names the crate root re-exports), so the files of a crate
//!   can be read bottom-up too. Crate roots define nothing: they declare
//!   modules and re-export, so no code hides from that check there.
//!   A module uses the children it declares, so a child that names its
//!   parent's items makes a loop too: what a folder's files share lives in
//!   a file of its own, which the parent re-exports.
//! * The bird's-eye view of ARCHITECTURE.md draws every workspace crate.
//! * `unsafe`: allowed only in `smtlab-sys`, smtalloc's `sys/` and the
//!   preload library's exports, and every `unsafe` block and impl there has
//!   a `// SAFETY:` comment right above it.
//! * Extras: the name of a sample's extra is spelled only in smtlab-types'
//!   `extras`, where it is defined; other code (tests aside) uses that
//!   definition.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One codemap row: the crate's layer and the crates it may use.
#[derive(Debug)]
struct Row {
    layer: u32,
    may_use: BTreeSet<String>,
}

/// The codemap table of ARCHITECTURE.md: rows `| layer | `crate` | owns |
/// may use |`, crates in backticks.
fn codemap() -> BTreeMap<String, Row> {
    let text = fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "", layer, crate, owns, may use, ""
        if cells.len() != 6 {
            continue;
        }
        let Ok(layer) = cells[1].parse::<u32>() else {
            continue;
        };
        let name = cells[2].trim_matches('`').to_string();
        let may_use = ticked(cells[4]);
        rows.insert(name, Row { layer, may_use });
    }
    assert!(rows.len() >= 15, "codemap rows not found: {rows:?}");
    rows
}

/// The `backticked` words of a cell.
fn ticked(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Every workspace crate with its manifest.
fn crates() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for e in fs::read_dir(root().join("crates")).unwrap() {
        let dir = e.unwrap().path();
        let manifest = dir.join("Cargo.toml");
        if manifest.is_file() {
            let text = fs::read_to_string(&manifest).unwrap();
            let name = text
                .lines()
                .find_map(|l| l.strip_prefix("name = \""))
                .and_then(|l| l.strip_suffix('"'))
                .expect("package name")
                .to_string();
            out.push((name, dir));
        }
    }
    out.sort();
    out
}

/// The workspace crates a manifest depends on, in any section.
fn smtlab_deps(dir: &Path, names: &BTreeSet<String>) -> BTreeSet<String> {
    let text = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    text.lines()
        .filter_map(|l| {
            // `alias = { package = "name", ... }` depends on `name`.
            match l.split_once("package = \"") {
                Some((_, rest)) => rest.split('"').next(),
                None => l.split(['.', ' ', '=']).next(),
            }
        })
        .filter(|d| names.contains(*d))
        .map(str::to_string)
        .collect()
}

#[test]
fn crates_use_only_the_crates_below_them() {
    let map = codemap();
    let all = crates();
    let names: BTreeSet<String> = all.iter().map(|(n, _)| n.clone()).collect();
    for name in &names {
        assert!(
            map.contains_key(name),
            "crate {name} has no row in ARCHITECTURE.md's codemap"
        );
    }
    for (name, row) in &map {
        assert!(
            names.contains(name),
            "ARCHITECTURE.md names {name}, no such crate"
        );
        for used in &row.may_use {
            let below = map
                .get(used)
                .unwrap_or_else(|| panic!("{name} may use {used}, which has no row"));
            assert!(
                below.layer < row.layer,
                "{name} (layer {}) may use {used} (layer {}): not below it",
                row.layer,
                below.layer
            );
        }
    }
    for (name, dir) in &all {
        let row = &map[name];
        for dep in smtlab_deps(dir, &names) {
            assert!(
                row.may_use.contains(&dep),
                "{name} depends on {dep}, which ARCHITECTURE.md does not let it use"
            );
        }
    }
}

/// The crate names drawn in the bird's-eye view's diagrams (the `text`
/// blocks between `## Bird's-eye view` and the next section).
fn drawn_crates(architecture: &str) -> BTreeSet<String> {
    let section = architecture
        .split("## Bird's-eye view")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("ARCHITECTURE.md has a bird's-eye view");
    section
        .split("```")
        .skip(1)
        .step_by(2)
        .flat_map(|block| block.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')))
        .filter(|w| w.starts_with("smtlab") || w.starts_with("smtalloc"))
        .map(|w| w.trim_end_matches('-').to_string())
        .collect()
}

#[test]
fn every_crate_is_in_the_birds_eye_diagram() {
    let text = fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let drawn = drawn_crates(&text);
    let names: BTreeSet<String> = crates().into_iter().map(|(n, _)| n).collect();
    let missing: Vec<_> = names.difference(&drawn).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's bird's-eye diagram leaves out {missing:?}"
    );
    let unknown: Vec<_> = drawn.difference(&names).collect();
    assert!(
        unknown.is_empty(),
        "ARCHITECTURE.md's bird's-eye diagram draws {unknown:?}, no such crate"
    );
}

#[test]
fn the_diagram_check_sees_a_missing_crate() {
    let text = "# A\n\n## Bird's-eye view\n\n```text\na → b\n```\n\n```text\n  \
                smtlab (the CLI)\n  │\nsmtlab-types ── smtalloc-preload\n```\n\
                `smtlab-store` in prose is not drawn.\n\n## Codemap\n\n```text\nsmtlab-stats\n```\n";
    assert_eq!(
        drawn_crates(text),
        BTreeSet::from([
            "smtlab".to_string(),
            "smtlab-types".to_string(),
            "smtalloc-preload".to_string()
        ])
    );
}

/// Source files of a crate by module path (`lib`, `engine`, `analysis::usl`).
fn modules(dir: &Path) -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = dir.join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap().with_extension("");
            let mut m = rel.to_string_lossy().replace('/', "::");
            if let Some(parent) = m.strip_suffix("::mod") {
                m = parent.to_string();
            }
            (m, f)
        })
        .collect()
}

/// The code of a file that is not test code: everything before its
/// `#[cfg(test)] mod tests`, without comments.
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap();
    // An inline `mod tests { ... }`, of any visibility (a `mod tests;` is a
    // file of its own).
    let at_tests = text.match_indices("#[cfg(test)]\n").find(|(i, m)| {
        let next = text[i + m.len()..].lines().next().unwrap_or("");
        let item = next
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ");
        item.starts_with("mod tests {")
    });
    let before_tests = &text[..at_tests.map_or(text.len(), |(i, _)| i)];
    before_tests
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names a crate root re-exports from its own modules (`pub use
/// store::Store;` maps `Store` to `store`), so that `crate::Store` counts
/// as a use of `store`.
fn root_exports(mods: &BTreeMap<String, PathBuf>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(root) = mods.get("lib") else {
        return out;
    };
    let text = code(root);
    for stmt in text.split(';') {
        let Some(at) = stmt.find("pub use ") else {
            continue;
        };
        // One space between words: `a::{B, C as D}`.
        let path = stmt[at + "pub use ".len()..]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let (base, names): (&str, Vec<&str>) = match path.split_once("::{") {
            Some((base, list)) => (base, list.trim_end_matches('}').split(',').collect()),
            None => match path.rsplit_once("::") {
                Some((base, name)) => (base, vec![name]),
                None => continue,
            },
        };
        let module = base.trim_start_matches("crate::");
        if !mods.contains_key(module) {
            continue; // another crate's names
        }
        for n in names.iter().map(|n| n.trim()) {
            let shown = n.rsplit(" as ").next().unwrap();
            let shown = shown.rsplit("::").next().unwrap();
            if !shown.is_empty() && shown != "self" {
                out.insert(shown.to_string(), module.to_string());
            }
        }
    }
    out
}

/// The modules of `mods` that module `m` (file `path`) refers to, directly
/// or through a name its crate root re-exports.
fn uses(m: &str, path: &Path, mods: &BTreeMap<String, PathBuf>) -> BTreeSet<String> {
    let text = code(path);
    let exports = root_exports(mods);
    let mut refs: Vec<String> = Vec::new();
    for prefix in ["crate::", "super::"] {
        for (i, _) in text.match_indices(prefix) {
            let before = text[..i].chars().last();
            // The second `super::` of `super::super::` is the first's.
            if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | ':')) {
                continue;
            }
            let mut after = &text[i + prefix.len()..];
            let base = if prefix == "crate::" {
                String::new()
            } else {
                // Each `super::` climbs one module up from `m`.
                let mut base = parent(m);
                while let Some(rest) = after.strip_prefix("super::") {
                    base = parent(&base);
                    after = rest;
                }
                base
            };
            let head: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(*c, '_' | ':'))
                .collect();
            // `crate::{a, b::X}` and `crate::a::{X, Y}` name several paths.
            let group = after[head.len()..]
                .strip_prefix('{')
                .and_then(|g| g.split_once('}'))
                .map(|(list, _)| list);
            let paths: Vec<String> = match group {
                Some(list) => list
                    .split(',')
                    .map(|p| format!("{head}{}", p.trim()))
                    .collect(),
                None => vec![head],
            };
            for p in paths {
                let p: String = p.chars().filter(|c| !c.is_whitespace()).collect();
                if base.is_empty() {
                    refs.push(p);
                } else {
                    refs.push(format!("{base}::{p}"));
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    for r in refs {
        let parts: Vec<&str> = r.split("::").filter(|p| !p.is_empty()).collect();
        let mut target = None;
        for k in (1..=parts.len()).rev() {
            let cand = parts[..k].join("::");
            if mods.contains_key(&cand) {
                target = Some(cand);
                break;
            }
        }
        // A name of the crate root: the module it comes from.
        if target.is_none() {
            target = parts.first().and_then(|n| exports.get(*n)).cloned();
        }
        // A use of an ancestor counts: a child that names its parent's
        // items (`super::Config`) and a parent that declares the child make
        // a loop, which moving the shared items to a sibling file breaks.
        if let Some(cand) = target {
            if cand != m {
                out.insert(cand);
            }
        }
    }
    // A module uses the children it declares (`mod child;`, then
    // `child::f()` or `pub use child::X`, paths the scan above skips).
    for child in mods.keys() {
        if parent(child) == m {
            out.insert(child.clone());
        }
    }
    out
}

fn parent(m: &str) -> String {
    m.rsplit_once("::")
        .map(|(p, _)| p.to_string())
        .unwrap_or_default()
}

/// A loop in `edges`, if any, as the modules around it.
fn find_loop(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        u: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(u.to_string(), 1);
        stack.push(u.to_string());
        for v in edges.get(u).into_iter().flatten() {
            match state.get(v.as_str()) {
                Some(1) => {
                    let at = stack.iter().position(|x| x == v).unwrap();
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(v.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(v, edges, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(u.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for u in edges.keys() {
        if !state.contains_key(u.as_str()) {
            if let Some(c) = visit(u, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_module_uses_one_that_uses_it() {
    let mut loops = Vec::new();
    for (name, dir) in crates() {
        let mods = modules(&dir);
        // The crate root declares and re-exports; test-only modules stand
        // beside the code they test.
        let edges: BTreeMap<String, BTreeSet<String>> = mods
            .iter()
            .filter(|(m, _)| !matches!(m.as_str(), "lib" | "main"))
            .filter(|(m, _)| {
                let leaf = m.rsplit("::").next().unwrap();
                !matches!(leaf, "tests" | "testing" | "test_support")
            })
            .map(|(m, f)| (m.clone(), uses(m, f, &mods)))
            .collect();
        if let Some(cycle) = find_loop(&edges) {
            loops.push(format!("{name}: {}", cycle.join(" -> ")));
        }
    }
    assert!(
        loops.is_empty(),
        "modules use each other in a loop:\n{}",
        loops.join("\n")
    );
}

/// Crates whose root is their public API itself: smtalloc's few functions
/// are thin calls into its `sys` layer.
const ROOT_HOLDS_API: [&str; 1] = ["smtalloc"];

/// The items a file defines at its top level (`fn`, `struct`, `impl`, ...).
fn top_level_items(text: &str) -> Vec<String> {
    let kinds = [
        "fn ", "struct ", "enum ", "impl", "trait ", "const ", "static ", "type ", "union ",
    ];
    text.lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('}'))
        .filter(|l| {
            let item = l
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ")
                .trim_start_matches("unsafe ");
            kinds.iter().any(|k| item.starts_with(k))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn crate_roots_only_declare_and_re_export() {
    let mut faults = Vec::new();
    for (name, dir) in crates() {
        let lib = dir.join("src/lib.rs");
        if !lib.is_file() || ROOT_HOLDS_API.contains(&name.as_str()) {
            continue;
        }
        for item in top_level_items(&code(&lib)) {
            faults.push(format!("{name}/src/lib.rs defines `{item}`"));
        }
    }
    assert!(
        faults.is_empty(),
        "a crate root defines code (move it to a file named after it):\n{}",
        faults.join("\n")
    );
}

#[test]
fn root_names_count_as_uses_of_their_module() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(
        src.join("lib.rs"),
        "mod a;\nmod b;\npub use a::{Thing, Other as Renamed};\npub use b::f;\n",
    )
    .unwrap();
    fs::write(src.join("a.rs"), "use crate::f;\npub struct Thing;\n").unwrap();
    fs::write(
        src.join("b.rs"),
        "use crate::{Renamed, a::Thing};\npub fn f() {}\n",
    )
    .unwrap();
    let mods = modules(dir.path());
    assert_eq!(uses("a", &mods["a"], &mods), BTreeSet::from(["b".into()]));
    assert_eq!(uses("b", &mods["b"], &mods), BTreeSet::from(["a".into()]));
    assert_eq!(
        top_level_items("//! doc\nmod a;\npub use a::X;\npub fn f() {}\nimpl X {}\n"),
        ["pub fn f() {}", "impl X {}"]
    );
}

#[test]
fn the_loop_finder_finds_loops() {
    // The check above must be able to fail.
    let e = |pairs: &[(&str, &str)]| {
        let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            m.entry(a.to_string()).or_default().insert(b.to_string());
            m.entry(b.to_string()).or_default();
        }
        m
    };
    assert_eq!(find_loop(&e(&[("a", "b"), ("b", "c")])), None);
    assert_eq!(
        find_loop(&e(&[("a", "b"), ("b", "c"), ("c", "a")])),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("a.rs"), "use crate::b::X;\n").unwrap();
    fs::write(src.join("b.rs"), "fn f() { super::a::g() }\n").unwrap();
    let mods = modules(dir.path());
    assert_eq!(uses("a", &mods["a"], &mods), BTreeSet::from(["b".into()]));
    assert_eq!(uses("b", &mods["b"], &mods), BTreeSet::from(["a".into()]));
}

#[test]
fn a_child_naming_its_parent_makes_a_loop() {
    // A parent that declares a child and dispatches to it, and a child that
    // names the parent's items: the loop item 5 of issue 30 removed.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("web/event")).unwrap();
    fs::write(src.join("lib.rs"), "pub mod web;\n").unwrap();
    fs::write(
        src.join("web/mod.rs"),
        "mod config;\nmod event;\npub use config::Config;\npub fn start() { event::run() }\n",
    )
    .unwrap();
    fs::write(src.join("web/config.rs"), "pub struct Config;\n").unwrap();
    fs::write(
        src.join("web/event.rs"),
        "mod stage;\nuse super::Config;\npub fn run() {}\n\
         #[cfg(test)]\npub(crate) mod tests {\n    use super::super::config::X;\n}\n",
    )
    .unwrap();
    fs::write(
        src.join("web/event/stage.rs"),
        "use super::super::config::Config;\nfn f() { super::super::start() }\n",
    )
    .unwrap();
    let mods = modules(dir.path());
    let uses_of = |m: &str| uses(m, &mods[m], &mods);
    // The parent uses the children it declares, by bare paths too.
    assert_eq!(
        uses_of("web"),
        BTreeSet::from(["web::config".into(), "web::event".into()])
    );
    // `super::Config` is the parent's, though it comes from a sibling; test
    // code (here a `pub(crate) mod tests`) counts for nothing.
    assert_eq!(
        uses_of("web::event"),
        BTreeSet::from(["web".into(), "web::event::stage".into()])
    );
    // Each `super::` climbs one module.
    assert_eq!(
        uses_of("web::event::stage"),
        BTreeSet::from(["web".into(), "web::config".into()])
    );
    let edges: BTreeMap<String, BTreeSet<String>> =
        ["web", "web::config", "web::event", "web::event::stage"]
            .into_iter()
            .map(|m| (m.to_string(), uses_of(m)))
            .collect();
    assert_eq!(
        find_loop(&edges),
        Some(vec!["web".into(), "web::event".into(), "web".into()])
    );
    // Naming the sibling instead breaks the loop.
    fs::write(
        src.join("web/event.rs"),
        "use super::config::Config;\npub fn run() {}\n",
    )
    .unwrap();
    fs::remove_dir_all(src.join("web/event")).unwrap();
    let mods = modules(dir.path());
    let edges: BTreeMap<String, BTreeSet<String>> = mods
        .iter()
        .filter(|(m, _)| *m != "lib")
        .map(|(m, f)| (m.clone(), uses(m, f, &mods)))
        .collect();
    assert_eq!(find_loop(&edges), None);
}

/// Where `unsafe` may be allowed.
fn unsafe_allowed(rel: &str) -> bool {
    rel.starts_with("crates/smtlab-sys/src/")
        || rel.starts_with("crates/smtalloc/src/sys/")
        || rel == "crates/smtalloc-preload/src/exports.rs"
}

#[test]
fn unsafe_lives_only_in_sys_with_a_safety_comment_on_every_block() {
    let root = root().canonicalize().unwrap();
    let mut faults = Vec::new();
    for (_, dir) in crates() {
        for (_, file) in modules(&dir) {
            let rel = file
                .canonicalize()
                .unwrap()
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .to_string();
            let text = fs::read_to_string(&file).unwrap();
            if text.contains("allow(unsafe_code)") && !unsafe_allowed(&rel) {
                faults.push(format!("{rel} allows unsafe code"));
            }
            if !unsafe_allowed(&rel) {
                continue;
            }
            faults.extend(missing_safety(&rel, &text));
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

/// Every `unsafe` block or impl of `text` (file `rel`) without a
/// `// SAFETY:` comment right above it.
fn missing_safety(rel: &str, text: &str) -> Vec<String> {
    let mut faults = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let code = line.split("//").next().unwrap();
        // Blocks and impls; an `unsafe fn`'s contract is its callers'
        // business, each call being in a block.
        if !["unsafe {", "unsafe impl"].iter().any(|k| code.contains(k)) {
            continue;
        }
        // The comment sits right above the statement, which may start a
        // few lines earlier than the `unsafe` itself.
        let above = lines[i.saturating_sub(8)..=i].join("\n");
        if !above.contains("SAFETY:") {
            faults.push(format!(
                "{rel}:{}: `unsafe` without a `// SAFETY:` comment above it",
                i + 1
            ));
        }
    }
    faults
}

#[test]
fn the_safety_check_finds_a_bare_block() {
    let with = "// SAFETY: the pointer is valid.\nlet x = unsafe { *p };\n";
    let without = "let y = 1;\nlet x = unsafe { *p };\n";
    assert!(missing_safety("a.rs", with).is_empty());
    assert_eq!(missing_safety("a.rs", without).len(), 1);
}

/// Each workspace crate and the workspace crates it depends on to build
/// (normal dependencies, whatever their target or features; not dev or
/// build), as `cargo metadata` reads the manifests.
fn normal_deps() -> BTreeMap<String, BTreeSet<String>> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let names: BTreeSet<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap())
                .filter(|d| names.contains(d))
                .map(str::to_string)
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

/// Every workspace crate `name` needs to build, itself excluded.
fn closure(deps: &BTreeMap<String, BTreeSet<String>>, name: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![name.to_string()];
    while let Some(n) = todo.pop() {
        for d in deps.get(&n).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

/// Reading results is pure functions over stored samples: the store, the
/// analysis and the report must build without the programs smtlab measures
/// (servers, the DSM and its applications and message layer), the crate
/// that runs them, or the measurement engine. One stray edge (the store
/// naming the engine's trait, the engine naming execute's type) once made
/// analysis compile 15 of the workspace's crates.
#[test]
fn reading_results_compiles_neither_the_engine_nor_what_it_runs() {
    const READERS: [&str; 3] = ["smtlab-store", "smtlab-analyse", "smtlab-report"];
    const RUNNERS: [&str; 8] = [
        "smtlab-web",
        "smtlab-chat",
        "smtlab-serving",
        "smtlab-dsm",
        "smtlab-dsm-apps",
        "smtlab-msg",
        "smtlab-execute",
        "smtlab-measure",
    ];
    let deps = normal_deps();
    for reader in READERS {
        assert!(deps.contains_key(reader), "no crate {reader}");
        let needs = closure(&deps, reader);
        let wrong: Vec<&str> = RUNNERS.into_iter().filter(|r| needs.contains(*r)).collect();
        assert!(
            wrong.is_empty(),
            "{reader} builds {wrong:?} (it needs {needs:?}); move the shared \
             types down to smtlab-types instead"
        );
    }
}

/// The web product (HTTP server, file set, HTTP load generator, nginx) and
/// the chat product (IRC server, chat load generator, ngircd) were one
/// crate tied by three small helpers: each now builds without the other,
/// what they share is the small crate below both.
#[test]
fn the_web_and_chat_products_build_without_each_other() {
    let deps = normal_deps();
    for (product, other) in [("smtlab-web", "smtlab-chat"), ("smtlab-chat", "smtlab-web")] {
        let needs = closure(&deps, product);
        assert!(
            needs.contains("smtlab-serving"),
            "{product} no longer uses smtlab-serving: {needs:?}"
        );
        assert!(
            !needs.contains(other),
            "{product} builds {other} (it needs {needs:?}); move what both use to smtlab-serving"
        );
    }
    let shared = closure(&deps, "smtlab-serving");
    assert!(
        !shared.contains("smtlab-web") && !shared.contains("smtlab-chat"),
        "smtlab-serving builds a product it serves: {shared:?}"
    );
}

/// The doctor lists installed allocators and judges the machine; it plans
/// nothing. With the allocator table in the planner, it built the planner,
/// the workloads and the whole DSM for that table.
#[test]
fn the_doctor_builds_the_allocator_table_without_the_planner() {
    let deps = normal_deps();
    let needs = closure(&deps, "smtlab-doctor");
    assert!(
        needs.contains("smtlab-allocators"),
        "smtlab-doctor no longer uses smtlab-allocators: {needs:?}"
    );
    for far in [
        "smtlab-plan",
        "smtlab-workloads",
        "smtlab-dsm",
        "smtlab-msg",
    ] {
        assert!(
            !needs.contains(far),
            "smtlab-doctor builds {far} (it needs {needs:?})"
        );
    }
}

/// Planning checks a DSM point's parameters (`smtlab-dsm-params`) but runs
/// no DSM: it once built the whole DSM for that one check.
#[test]
fn planning_checks_dsm_points_without_building_the_dsm() {
    let deps = normal_deps();
    let needs = closure(&deps, "smtlab-plan");
    assert!(
        needs.contains("smtlab-dsm-params"),
        "smtlab-plan no longer uses smtlab-dsm-params: {needs:?}"
    );
    assert!(
        !needs.contains("smtlab-dsm"),
        "smtlab-plan builds smtlab-dsm (it needs {needs:?})"
    );
}

#[test]
fn the_closure_follows_chains() {
    let deps: BTreeMap<String, BTreeSet<String>> = [
        ("a", &["b"][..]),
        ("b", &["c"][..]),
        ("c", &[][..]),
        ("d", &["a"][..]),
    ]
    .into_iter()
    .map(|(n, ds)| (n.to_string(), ds.iter().map(|d| d.to_string()).collect()))
    .collect();
    assert_eq!(
        closure(&deps, "a"),
        BTreeSet::from(["b".to_string(), "c".to_string()])
    );
    assert!(closure(&deps, "c").is_empty());
}

/// A Rust file as the extras check reads it: its code outside test items
/// (whatever follows a `#[cfg(test)]`: a module, a function, an impl, a
/// `use`), comments and string contents removed, and the contents of its
/// string literals outside test items, each with its line.
struct Lexed {
    code: String,
    literals: Vec<(usize, String)>,
}

/// Reads `text` as Rust: comments, strings (plain, raw, byte), char
/// literals and lifetimes, and the braces that end a test item.
fn lex(text: &str) -> Lexed {
    let b = text.as_bytes();
    let mut out = Lexed {
        code: String::new(),
        literals: Vec::new(),
    };
    let (mut i, mut line) = (0, 1);
    // Inside a test item: its brace depth, and whether its body began.
    let mut test: Option<(usize, bool)> = None;
    let ident = |k: usize| k > 0 && (b[k - 1].is_ascii_alphanumeric() || b[k - 1] == b'_');
    while i < b.len() {
        let c = b[i];
        let start = i;
        if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(b.len(), |n| i + n);
            continue;
        }
        if text[i..].starts_with("/*") {
            let end = text[i + 2..].find("*/").map_or(b.len(), |n| i + 2 + n + 2);
            line += text[i..end].matches('\n').count();
            i = end;
            continue;
        }
        if text[i..].starts_with("#[cfg(test)]") && test.is_none() {
            test = Some((0, false));
            i += "#[cfg(test)]".len();
            continue;
        }
        // A string: `"..."`, `r"..."`, `r#"..."#`, `b"..."`.
        let raw_hashes = (c == b'r' && !ident(i))
            .then(|| text[i + 1..].find(|ch| ch != '#').map(|n| (n, i + 1 + n)))
            .flatten()
            .filter(|&(_, q)| b.get(q) == Some(&b'"'));
        if c == b'"' || raw_hashes.is_some() {
            let (body, end) = match raw_hashes {
                Some((n, q)) => {
                    let close = format!("\"{}", "#".repeat(n));
                    let e = text[q + 1..].find(&close).map_or(b.len(), |k| q + 1 + k);
                    (q + 1, (e, e + close.len()))
                }
                None => {
                    let mut k = i + 1;
                    while k < b.len() && b[k] != b'"' {
                        k += if b[k] == b'\\' { 2 } else { 1 };
                    }
                    (i + 1, (k.min(b.len()), (k + 1).min(b.len())))
                }
            };
            if test.is_none() {
                out.literals.push((line, text[body..end.0].to_string()));
                out.code.push_str("\"\"");
            }
            line += text[start..end.1].matches('\n').count();
            i = end.1;
            continue;
        }
        // A char literal (`'"'`, `'\''`), or a lifetime.
        if c == b'\'' {
            let len = if b.get(i + 1) == Some(&b'\\') {
                text[i + 2..].find('\'').map_or(1, |n| n + 3)
            } else if text[i + 1..].chars().nth(1) == Some('\'') {
                2 + text[i + 1..].chars().next().unwrap().len_utf8()
            } else {
                1
            };
            if test.is_none() {
                out.code.push_str(&text[i..i + len]);
            }
            i += len;
            continue;
        }
        let ch = text[i..].chars().next().unwrap();
        match (&mut test, ch) {
            (Some((depth, body)), '{') => {
                *depth += 1;
                *body = true;
            }
            (Some((depth, _)), '}') => {
                *depth -= 1;
                if *depth == 0 {
                    test = None;
                }
            }
            (Some((0, false)), ';') => test = None,
            (Some(_), _) => {}
            (None, _) => out.code.push(ch),
        }
        if ch == '\n' {
            line += 1;
        }
        i += ch.len_utf8();
    }
    out
}

/// The extras names smtlab-types defines: each `pub const NAME: &str =
/// "value";` of extras.rs (`WAIT_S` = `wait_s`, `RANK_PREFIX` = `rank.`),
/// and the shapes of the names its functions build, a `usize` parameter as
/// `#` and any other as `*` (`rate.{k}` as `rate.#`,
/// `{RANK_PREFIX}{rank}.{stat}` as `rank.#.*`).
fn extras_names() -> (BTreeMap<String, String>, Vec<String>) {
    let text = fs::read_to_string(root().join("crates/smtlab-types/src/extras.rs")).unwrap();
    let consts: BTreeMap<String, String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const "))
        .filter_map(|l| l.split_once(": &str = \""))
        .map(|(name, v)| (name.to_string(), v.trim_end_matches("\";").to_string()))
        .collect();
    assert!(consts.len() > 50, "extras.rs's names not found: {consts:?}");
    let lines: Vec<&str> = text.lines().collect();
    let shapes = lex(&text)
        .literals
        .into_iter()
        .filter(|(_, l)| l.contains('{'))
        .map(|(line, l)| {
            // The parameters of the function the literal is in.
            let signature = lines[..line]
                .iter()
                .rev()
                .find_map(|l| l.trim().strip_prefix("pub fn "))
                .expect("a key built outside a function");
            let numbers: Vec<&str> = signature
                .split(['(', ',', ')'])
                .filter_map(|p| p.trim().strip_suffix(": usize"))
                .collect();
            let mut shape = String::new();
            for (k, part) in l.split(['{', '}']).enumerate() {
                // Odd parts are placeholders: a name's value, a number or
                // any text.
                shape.push_str(match (k % 2, consts.get(part)) {
                    (0, _) => part,
                    (_, Some(v)) => v,
                    _ if numbers.contains(&part) => "#",
                    _ => "*",
                });
            }
            shape
        })
        .collect();
    (consts, shapes)
}

/// Whether `text` (a literal, each `{placeholder}` as `\0`) fits `shape`:
/// `#` stands for digits or placeholders, `*` for what a key's part may
/// hold (letters, digits, `_`, `-`) or placeholders, one or more.
fn fits(shape: &[u8], text: &[u8]) -> bool {
    let part = |wild: u8, c: u8| {
        c == 0
            || c.is_ascii_digit()
            || (wild == b'*' && (c.is_ascii_alphabetic() || matches!(c, b'_' | b'-')))
    };
    match shape.split_first() {
        None => text.is_empty(),
        Some((&w @ (b'*' | b'#'), rest)) => (1..=text.len())
            .take_while(|&k| part(w, text[k - 1]))
            .any(|k| fits(rest, &text[k..])),
        Some((c, rest)) => text.first() == Some(c) && fits(rest, &text[1..]),
    }
}

/// Where a file (its `text`) spells an extras name itself: each string
/// literal equal to a defined name or fitting the shape of a built one
/// (`"wait_s"`, `format!("rate.{k}")`), as (line, literal); and each
/// literal used directly as a key of `extras` (`extras.get("x")`,
/// `extras["x"]`, `extras.insert("x"`), defined or not, as the code around
/// it.
fn spelled_extras(
    text: &str,
    names: &(BTreeMap<String, String>, Vec<String>),
) -> (Vec<(usize, String)>, Vec<String>) {
    let (consts, shapes) = names;
    let lexed = lex(text);
    let literals = lexed
        .literals
        .into_iter()
        .filter(|(_, l)| {
            let placeholders: String = l
                .split(['{', '}'])
                .enumerate()
                .map(|(k, p)| if k % 2 == 0 { p } else { "\0" })
                .collect();
            consts.values().any(|v| v == l)
                || shapes
                    .iter()
                    .any(|s| fits(s.as_bytes(), placeholders.as_bytes()))
        })
        .collect();
    // String contents are gone from the code: `extras.get("")`.
    let code: String = lexed.code.split_whitespace().collect();
    let mut accesses = Vec::new();
    for access in [
        ".get(\"",
        ".get(&\"",
        "[\"",
        ".insert(\"",
        ".contains_key(\"",
        ".entry(\"",
        ".remove(\"",
    ] {
        for (at, _) in code.match_indices(&format!("extras{access}")) {
            let from = code[..at]
                .char_indices()
                .rev()
                .nth(30)
                .map_or(0, |(k, _)| k);
            let to = code[at..]
                .char_indices()
                .nth(40)
                .map_or(code.len(), |(k, _)| at + k);
            accesses.push(code[from..to].to_string());
        }
    }
    (literals, accesses)
}

/// Extras names that are also the names of server parameters (`--param
/// connections=`, `messages=`) and of the chat metric, spelled in many
/// files for those: a literal equal to one is not taken for the extra
/// (only a literal key of `extras` is).
const SHARED_WORDS: [&str; 2] = ["connections", "messages"];

/// Literals equal to an extras name that are another concept spelled the
/// same in one file: (file under `crates/`, the literals that may each
/// appear there once, what they are). A file's own use of one as an extra
/// would make it twice.
const NOT_EXTRAS: [(&str, &[&str], &str); 2] = [
    (
        "smtlab-study/src/comm_tables.rs",
        &[
            "diffs",
            "locks",
            "barriers",
            "served",
            "retransmissions",
            "duplicates",
        ],
        "the statistics table's column headers",
    ),
    (
        "smtlab/src/commands/rank.rs",
        &["verified"],
        "the word printed",
    ),
];

/// A sample's extras are a contract between the programs that write them
/// (execute, dsm, workloads) and the code that reads them back (analyse,
/// report, study, the CLI): each name is defined once, in smtlab-types'
/// `extras`, and every other file names it by that definition, so that a
/// writer and a reader cannot drift apart by a typo, and a reader finds
/// what a name means where it is defined. Test code may spell names to pin
/// them.
#[test]
fn extras_names_are_spelled_only_where_they_are_defined() {
    let names = extras_names();
    let root = root().canonicalize().unwrap();
    let mut faults = Vec::new();
    for (name, dir) in crates() {
        if name == "smtlab-types" {
            continue;
        }
        for (m, file) in modules(&dir) {
            let leaf = m.rsplit("::").next().unwrap();
            if matches!(leaf, "tests" | "testing" | "test_support") {
                continue;
            }
            let rel = file.canonicalize().unwrap();
            let rel = rel
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .to_string();
            let (literals, accesses) = spelled_extras(&fs::read_to_string(&file).unwrap(), &names);
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            for (_, l) in &literals {
                *counts.entry(l).or_default() += 1;
            }
            for (line, l) in literals
                .iter()
                .filter(|(_, l)| !SHARED_WORDS.contains(&l.as_str()))
            {
                let allowed = NOT_EXTRAS.iter().any(|(path, lits, _)| {
                    rel == format!("crates/{path}")
                        && lits.contains(&l.as_str())
                        && counts[l.as_str()] == 1
                });
                if !allowed {
                    faults.push(format!("{rel}:{line}: \"{l}\""));
                }
            }
            for a in accesses {
                faults.push(format!("{rel}: a literal key of `extras`: {a}"));
            }
        }
    }
    assert!(
        faults.is_empty(),
        "extras names spelled outside smtlab-types (name them by smtlab_types::extras):\n{}",
        faults.join("\n")
    );
}

/// The extras check finds what it is for, so that it cannot pass by
/// seeing nothing: names read and written by their spelling, built by a
/// format, and literal keys of `extras`; but not test code, comments, the
/// names' definitions used by path, nor the same words in other roles.
#[test]
fn the_extras_check_finds_a_spelled_name() {
    let names = extras_names();
    assert!(names.0.get("WAIT_S").is_some_and(|v| v == "wait_s"));
    let text = r#"
use smtlab_types::extras::dsm;
// "wait_s" in a comment
fn read(s: &Sample, p: &PointData) -> f64 {
    let r = s.extras.get(&format!("rate.{k}")).copied();
    let x = extra(p, "latency_p99_us").unwrap_or(0.0);
    s.extras["not_defined_yet"] + total(p, dsm::WAIT_S) + x + r.unwrap_or(0.0)
}
fn write(x: &mut BTreeMap<String, f64>, rank: usize, kind: &str) {
    x.insert(format!("rank.{rank}.{}", "getp"), 1.0);
    x.insert(format!("errors.{kind}"), 1.0);
    let _ = ("samples.csv", "report.html", "thread 'main' panicked", '"');
}
#[cfg(test)]
mod tests {
    fn pinned(s: &Sample) {
        assert_eq!(s.extras["wait_s"], 1.0);
    }
}
"#;
    let (literals, accesses) = spelled_extras(text, &names);
    let spelled: Vec<&str> = literals.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        spelled,
        [
            "rate.{k}",
            "latency_p99_us",
            "rank.{rank}.{}",
            "getp",
            "errors.{kind}"
        ],
        "{literals:?}"
    );
    assert_eq!(literals[1].0, 6, "the line of a literal");
    assert_eq!(accesses.len(), 1, "{accesses:?}");
    assert!(accesses[0].contains("extras[\"\"]"), "{accesses:?}");
}

/// No function outside tests is over 120 lines: clippy counts past that
/// (`clippy.toml`) and the workspace denies `too_many_lines`, so a long
/// function fails `cargo clippy -- -D warnings` in CI, not a review.
#[test]
fn long_functions_are_denied_by_clippy() {
    let clippy = std::fs::read_to_string(root().join("clippy.toml")).unwrap();
    let threshold = clippy
        .lines()
        .find_map(|l| l.trim().strip_prefix("too-many-lines-threshold"))
        .and_then(|rest| rest.trim().strip_prefix('='))
        .map(|v| v.trim().parse::<u32>().unwrap());
    assert_eq!(threshold, Some(120), "clippy.toml: {clippy}");
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let lints = manifest
        .split("[workspace.lints.clippy]")
        .nth(1)
        .and_then(|s| s.split("\n[").next())
        .unwrap_or("");
    assert!(
        lints
            .lines()
            .any(|l| l.split_whitespace().collect::<String>() == "too_many_lines=\"deny\""),
        "the workspace does not deny clippy::too_many_lines:\n{lints}"
    );
    // Every workspace crate takes the workspace's lints.
    for dir in std::fs::read_dir(root().join("crates")).unwrap() {
        let toml = dir.unwrap().path().join("Cargo.toml");
        let text = std::fs::read_to_string(&toml).unwrap();
        assert!(
            text.contains("[lints]\nworkspace = true"),
            "{} does not take the workspace's lints",
            toml.display()
        );
    }
}
