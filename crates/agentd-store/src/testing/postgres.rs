//! A throw-away PostgreSQL cluster for a test binary: started once, at the
//! first [`database`] call, from the server binaries in
//! `/usr/lib/postgresql/*/bin`, on a free loopback port, in a temp dir,
//! with password login; each test gets a database of its own.
//!
//! Statics are never dropped, so the cluster is stopped by a watchdog
//! process started first: it waits for its stdin (a pipe this process
//! holds) to close, which happens however this process ends (return,
//! panic, kill -9), then stops the server (`pg_ctl stop -m immediate`) and
//! removes the directory.
//!
//! Without server binaries [`database`] says so on stderr and returns
//! `None` (the test skips), unless `AGENTD_REQUIRE_POSTGRES=1`: then it
//! panics, so CI on a machine that has them cannot skip them.

use crate::PostgresOptions;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where Debian installs the server binaries, one dir per major version.
const INSTALL_ROOT: &str = "/usr/lib/postgresql";
/// The cluster's superuser, and the user the tests log in as.
const USER: &str = "agentd";
/// A throw-away cluster's password (it listens on loopback only, for this
/// process's lifetime).
const PASSWORD: &str = "agentd-test-password";

/// A running cluster.
pub struct TestCluster {
    port: u16,
    dir: PathBuf,
    next_db: AtomicUsize,
    /// Its stdin is closed at process exit: then it stops the server.
    _watchdog: Mutex<Child>,
}

impl TestCluster {
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The password of the test user.
    pub fn password(&self) -> &'static str {
        PASSWORD
    }

    /// The cluster's directory (data, log), removed at process exit.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A URL of database `name`, with no password in it.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates a new, empty database; returns its name.
    pub async fn create_database(&self) -> String {
        let name = format!("t{}", self.next_db.fetch_add(1, Ordering::SeqCst));
        let mut config: tokio_postgres::Config = self.url("postgres").parse().expect("maintenance URL");
        config.password(PASSWORD);
        let (client, connection) =
            config.connect(tokio_postgres::NoTls).await.expect("connect to the test cluster");
        let driver = async move {
            let _ = connection.await;
        };
        let create = async {
            client.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("create a test database");
        };
        tokio::select! {
            () = create => {}
            () = driver => panic!("the test cluster closed the connection"),
        }
        name
    }

    /// Options of a new, empty database.
    pub async fn options(&self) -> PostgresOptions {
        let name = self.create_database().await;
        PostgresOptions { url: self.url(&name), password: Some(PASSWORD.to_owned()) }
    }
}

/// The cluster of this test binary, started at the first call; `None` when
/// this machine has no PostgreSQL server (after saying so on stderr).
pub fn cluster() -> Option<&'static TestCluster> {
    static CLUSTER: OnceLock<Option<TestCluster>> = OnceLock::new();
    let cluster = CLUSTER.get_or_init(|| server_bin().map(|bin| start(&bin))).as_ref();
    if cluster.is_none() {
        if std::env::var("AGENTD_REQUIRE_POSTGRES").as_deref() == Ok("1") {
            panic!("AGENTD_REQUIRE_POSTGRES=1 but no PostgreSQL server binaries in {INSTALL_ROOT}/*/bin");
        }
        // Straight to stderr: the harness captures `eprintln!` of passing tests.
        let _ = writeln!(std::io::stderr(), "skipped: no PostgreSQL server binaries in {INSTALL_ROOT}/*/bin");
    }
    cluster
}

/// Options of a new database on this binary's cluster (`None`: skipped).
pub async fn database() -> Option<PostgresOptions> {
    Some(cluster()?.options().await)
}

/// The newest major version's bin dir that has `initdb`.
fn server_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(INSTALL_ROOT)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let major = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((major, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("run id -u");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// `program` as the user that runs the server: `postgres` when we are root
/// (initdb and postgres refuse root), else ourselves.
/// Runs in `dir`: the tests' working directory may be closed to `postgres`.
fn server_command(bin: &Path, program: &str, as_postgres: bool, dir: &Path) -> Command {
    let mut c = if as_postgres {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(program));
        c
    } else {
        Command::new(bin.join(program))
    };
    c.current_dir(dir);
    c
}

fn run(command: &mut Command, what: &str) {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free loopback port").port()
}

fn start(bin: &Path) -> TestCluster {
    let as_postgres = is_root();
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("agentd-pg-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&dir).expect("create the cluster's dir");
    if as_postgres {
        run(Command::new("chown").args(["postgres:postgres"]).arg(&dir), "chown the cluster's dir");
    }
    let data = dir.join("data");
    // First the watchdog, so that whatever happens next is cleaned up.
    let runuser = if as_postgres { "runuser -u postgres -- " } else { "" };
    let script = format!(
        "read _; {runuser}'{}' stop -D '{}' -m immediate >/dev/null 2>&1; rm -rf '{}'",
        bin.join("pg_ctl").display(),
        data.display(),
        dir.display()
    );
    let watchdog = Command::new("setsid")
        .args(["sh", "-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the cluster's watchdog");
    let pwfile = dir.join("pwfile");
    std::fs::write(&pwfile, PASSWORD).expect("write the password file");
    let mut initdb = server_command(bin, "initdb", as_postgres, &dir);
    initdb
        .arg("-D")
        .arg(&data)
        .args(["-U", USER, "-A", "scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions"])
        .arg(format!("--pwfile={}", pwfile.display()));
    run(&mut initdb, "initdb");
    // The server is the test's, not the product's: no fsync (a test needs
    // no power-loss safety, and a shared machine's disk is slow).
    let port = free_port();
    let options = format!(
        "-p {port} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c full_page_writes=off -c max_connections=400",
        dir.display()
    );
    let mut pg_ctl = server_command(bin, "pg_ctl", as_postgres, &dir);
    pg_ctl.arg("start").arg("-D").arg(&data).arg("-w").arg("-l").arg(dir.join("log")).args(["-o", &options]);
    run(&mut pg_ctl, "pg_ctl start");
    TestCluster { port, dir, next_db: AtomicUsize::new(0), _watchdog: Mutex::new(watchdog) }
}
