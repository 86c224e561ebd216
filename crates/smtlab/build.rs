//! Records the commit smtlab was built from, for the runs it stores.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    git_commit();
}

/// Record the commit smtlab was built from (runs store it), when built from
/// a git checkout; `unknown` otherwise (a crates.io or tarball build).
fn git_commit() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .is_some_and(|o| !o.stdout.is_empty());
    let value = match commit {
        Some(c) if dirty => format!("{c}-dirty"),
        Some(c) => c,
        None => "unknown".to_string(),
    };
    println!("cargo:rustc-env=SMTLAB_GIT_COMMIT={value}");
    // Rebuild when HEAD moves (the paths exist only in a checkout).
    for p in ["../../.git/HEAD", "../../.git/index"] {
        if std::path::Path::new(p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
}
