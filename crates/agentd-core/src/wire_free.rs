//! The core fails with [`crate::Error`], never with the wire's error type:
//! the one conversion is the server's (`ARCHITECTURE.md`, "One crate knows
//! the wire"). The compiler cannot refuse the name, so this test does.

use std::path::Path;

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

#[test]
fn no_source_file_of_the_core_names_the_wire_error() {
    let mut found = Vec::new();
    let read = naming_the_wire_error(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut found);
    assert!(read > 10, "only {read} source files were read");
    assert!(found.is_empty(), "{WIRE_ERROR} is named in {found:?}: fail with agentd_core::Error instead");
}
