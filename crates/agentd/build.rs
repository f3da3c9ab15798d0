//! Links the release daemon so that an idle one holds little memory.
//!
//! - *Code in the order it runs.* The kernel maps an executable's code a
//!   block at a time (64 KiB, or a whole page-cache folio, at each first
//!   touch), and every block touched counts in the process's resident
//!   memory. Left to the linker, the few thousand functions a start-up and
//!   a request run are scattered over 23 MiB of code, and an idle daemon
//!   held some 12 MiB of it. `link-order.txt` lists them, start-up first
//!   (`bench/link-order.sh` writes it from a run of the daemon under
//!   callgrind), and the linker places them together. A name the build no
//!   longer has is skipped: a stale list costs memory, never correctness.
//!   Local copies that fat LTO renamed (`name.5373`) get a number that
//!   moves with unrelated changes elsewhere in the program, so the list
//!   given to the linker names each of them with its neighbours too
//!   (`build/link_order.rs`): a start-up function it missed cost 64 KiB or
//!   more of resident code.
//! - *Packed relocations.* A position-independent executable carries a
//!   relocation per pointer in its constant data (1 MiB of them here), all
//!   read at start-up and resident after; packed (`DT_RELR`, glibc 2.36
//!   and later) they take a few KiB.
//!
//! Both only where they are known to work: release builds on and for
//! x86_64 Linux (GNU), whose default linker is LLD, with no other linker
//! configured; packing only with a glibc that reads it.
//! `AGENTD_LINK_ORDER=off` leaves both out.

#[path = "build/link_order.rs"]
mod link_order;

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=link-order.txt");
    println!("cargo:rerun-if-env-changed=AGENTD_LINK_ORDER");
    let var = |name: &str| env::var(name).unwrap_or_default();
    let wanted = var("AGENTD_LINK_ORDER") != "off"
        && var("PROFILE") == "release"
        && var("HOST") == "x86_64-unknown-linux-gnu"
        && var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("RUSTC_LINKER").is_empty()
        && !var("CARGO_ENCODED_RUSTFLAGS").contains("link");
    if !wanted {
        return;
    }
    let list = Path::new(&var("CARGO_MANIFEST_DIR")).join("link-order.txt");
    if let Ok(text) = std::fs::read_to_string(&list) {
        let ordered = Path::new(&var("OUT_DIR")).join("link-order.txt");
        std::fs::write(&ordered, link_order::with_neighbours(&text, link_order::LTO_SUFFIX_WINDOW))
            .expect("write the link order");
        link_arg(&format!("--symbol-ordering-file={}", ordered.display()));
        link_arg("--no-warn-symbol-ordering");
    }
    if glibc_reads_packed_relocations() {
        link_arg("-z,pack-relative-relocs");
    }
}

fn link_arg(arg: &str) {
    println!("cargo:rustc-link-arg-bin=agentd=-Wl,{arg}");
}

/// Whether this machine's glibc is 2.36 or later (`getconf` prints
/// `glibc 2.36`); anything else, or no answer, is a no.
fn glibc_reads_packed_relocations() -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (2, 36)
}
