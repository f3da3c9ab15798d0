//! Rules of the workspace's shape that no compiler checks (`ARCHITECTURE.md`):
//! what each crate must not depend on, the code map's "must not" column,
//! and one integration-test binary per crate.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's crates: every directory under `crates/` (the workspace's
/// members are `crates/*`), named as their packages are.
fn crates() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("crates"))
        .expect("read crates/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .map(|p| p.file_name().expect("a name").to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

const SQL: &[&str] =
    &["rusqlite", "libsqlite3-sys", "tokio-postgres", "postgres-protocol", "deadpool-postgres"];
const HTTP: &[&str] = &["axum", "hyper", "http", "reqwest", "tonic"];

/// What each crate must not depend on, however indirectly. Beside these,
/// no crate depends on the binary's crate, none on the counting allocator
/// with its default features, and none but the binary's on `agentd-glibc`
/// (its C symbols are the binary's alone).
fn must_not(krate: &str) -> Vec<&'static str> {
    match krate {
        "agentd-proto" => [&["tokio", "axum"][..], SQL].concat(),
        // Tasks, HTTP, SQL.
        "agentd-metrics" => [&["agentd-core"][..], HTTP, SQL].concat(),
        // HTTP, SQL; nor is the MCP client known to it.
        "agentd-core" => [&["agentd-mcp"][..], HTTP, SQL].concat(),
        "agentd-store" => vec!["agentd-mcp"],
        "agentd-client" => vec!["axum", "tonic", "agentd-core", "agentd-store"],
        // Storage only through the engine.
        "agentd-runtime" => [&["agentd-store"][..], SQL].concat(),
        // Tasks, models, HTTP.
        "agentd-workflow" | "agentd-instruction" => [&["agentd-core", "agentd-runtime"][..], HTTP].concat(),
        // The bench is no part of the daemon.
        "agentd" => vec!["agentd-bench"],
        // A few lines over glibc, nothing of the daemon's.
        "agentd-glibc" => [&["tokio", "agentd-core"][..], HTTP, SQL].concat(),
        "agentd-mcp" | "agentd-server" | "agentd-bench" | "agentd-alloc-count" => vec![],
        other => panic!("{other} has no row here: add what it must not depend on"),
    }
}

/// The packages `krate` is built with, however indirectly: normal
/// dependencies with the default features (not dev or build ones).
fn dependencies(krate: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--frozen",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
            "-p",
            krate,
        ])
        .current_dir(root())
        .output()
        .expect("run cargo tree");
    assert!(out.status.success(), "cargo tree -p {krate}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != krate)
        .map(str::to_owned)
        .collect()
}

/// The packages `Cargo.lock` knows: a rule naming anything else is a typo
/// that would check nothing.
fn locked() -> BTreeSet<String> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).expect("read Cargo.lock");
    lock.lines().filter_map(|l| l.strip_prefix("name = \"")?.strip_suffix('"').map(str::to_owned)).collect()
}

#[test]
fn no_crate_depends_on_what_the_code_map_forbids_it() {
    let locked = locked();
    let mut broken = Vec::new();
    for krate in crates() {
        let deps = dependencies(&krate);
        let mut rules = must_not(&krate);
        rules.push("agentd-alloc-count");
        if krate != "agentd" {
            rules.extend(["agentd", "agentd-glibc"]);
        }
        for forbidden in rules {
            assert!(locked.contains(forbidden), "{forbidden} is no package of Cargo.lock");
            if deps.contains(forbidden) {
                broken.push(format!("{krate} depends on {forbidden}"));
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}\n(see `cargo tree -e normal -i <package> -p <crate>`)");
}

#[test]
fn each_crate_has_one_integration_test_binary_at_most() {
    let mut extra = Vec::new();
    for krate in crates() {
        let dir = root().join("crates").join(&krate);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("read Cargo.toml");
        // A `[[test]]` target other than the suite is a binary of its own.
        let targets: Vec<&str> = manifest.split("[[test]]").skip(1).collect();
        if targets.iter().any(|t| !t.trim_start().starts_with("name = \"suite\"")) {
            extra.push(format!("{krate}: a [[test]] target other than `suite`"));
        }
        let Ok(entries) = std::fs::read_dir(dir.join("tests")) else { continue };
        for path in entries.map(|e| e.expect("an entry").path()) {
            // Cargo makes a binary of each `tests/*.rs` and `tests/*/main.rs`.
            let name = path.file_name().expect("a name").to_string_lossy().into_owned();
            let binary = if path.is_dir() {
                path.join("main.rs").is_file() && name != "suite"
            } else {
                name.ends_with(".rs")
            };
            if binary {
                extra.push(format!("{krate}: tests/{name}"));
            }
        }
    }
    assert!(extra.is_empty(), "integration-test binaries beside tests/suite/main.rs: {extra:#?}");
}

/// Written in two halves, so that this file does not name it either.
const WIRE_ERROR: &str = concat!("A2a", "Error");

/// The `.rs` files under `dir` whose text names the wire error, and how
/// many files were read.
fn naming_the_wire_error(dir: &Path, found: &mut Vec<String>) -> usize {
    let mut read = 0;
    for entry in std::fs::read_dir(dir).expect("read a source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            read += naming_the_wire_error(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            read += 1;
            if std::fs::read_to_string(&path).expect("read a source file").contains(WIRE_ERROR) {
                found.push(path.display().to_string());
            }
        }
    }
    read
}

/// The core and the runtime fail with `agentd_core::Error`, never with the
/// wire's error type: the one conversion is the server's ("One crate knows
/// the wire"). The compiler cannot refuse the name, so this test does.
#[test]
fn no_source_file_of_the_core_or_the_runtime_names_the_wire_error() {
    for krate in ["agentd-core", "agentd-runtime"] {
        let mut found = Vec::new();
        let read = naming_the_wire_error(&root().join("crates").join(krate).join("src"), &mut found);
        assert!(read > 10, "{krate}: only {read} source files were read");
        assert!(found.is_empty(), "{WIRE_ERROR} is named in {found:?}: fail with agentd_core::Error instead");
    }
}
