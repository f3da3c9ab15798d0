//! The C math functions the `agentd` binary calls, defined in it instead of
//! taken from glibc's `libm.so.6`.
//!
//! These few are all the binary asks of libm: tokio's scheduler calls `pow`
//! (its poll-time average), prometheus-client's exponential histogram
//! buckets `exp2`, SQLite's FTS5 ranking `log`, and an unoptimised build
//! `log2` as well. Loading libm for them costs an idle daemon about half a
//! MiB of resident memory: the loader runs every one of libm's IFUNC
//! resolvers and searches its symbol tables on every lookup, which pulls in
//! pages of a library the daemon otherwise never touches. Defined here, the
//! link resolves the calls in the executable, and `--as-needed` (rustc's
//! default on Linux) leaves libm out of the program's needed libraries. The
//! suite's `cli::the_binary_does_not_load_libm` holds that: a dependency
//! that starts calling another libm function fails it, and the function is
//! added here.
//!
//! The bodies are the `libm` crate's (ports of FreeBSD's msun, within 1
//! ULP), pure Rust: none of them calls back into these symbols. Unlike
//! glibc's they never set `errno`; the linker exports them (`-lm` is on its
//! command line), so a library loaded later with `dlopen` that calls them
//! gets these too. Only the `agentd` binary links this crate; its test
//! binaries keep glibc's.

/// `double pow(double, double)`.
#[unsafe(no_mangle)]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// `double exp2(double)`.
#[unsafe(no_mangle)]
pub extern "C" fn exp2(x: f64) -> f64 {
    libm::exp2(x)
}

/// `double log(double)`.
#[unsafe(no_mangle)]
pub extern "C" fn log(x: f64) -> f64 {
    libm::log(x)
}

/// `double log2(double)`.
#[unsafe(no_mangle)]
pub extern "C" fn log2(x: f64) -> f64 {
    libm::log2(x)
}
