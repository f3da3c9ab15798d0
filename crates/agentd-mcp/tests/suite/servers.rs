//! The MCP servers written by others that the tests start: the small server
//! on the official MCP Python SDK (`tests/mcp/server.py`), over streamable
//! HTTP or stdio, and the reference `@modelcontextprotocol/server-everything`
//! from npm over stdio. `scripts/test.sh` installs both: it sets
//! `AGENTD_MCP_PYTHON` to the interop virtualenv's python (which has `mcp`)
//! and runs `npm ci` in `tests/mcp`. Without them a test fails saying what
//! to do, unless `AGENTD_MCP_TESTS=skip` asks to skip them.
//! Shared with the daemon's suite (`#[path]`).

#![allow(dead_code, reason = "each suite uses its part")]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository")
}

/// The Python test server's script.
pub fn server_script() -> String {
    repo().join("tests/mcp/server.py").display().to_string()
}

/// Whether the MCP tests were asked to be skipped (`AGENTD_MCP_TESTS=skip`).
pub fn skipped() -> bool {
    if std::env::var("AGENTD_MCP_TESTS").as_deref() == Ok("skip") {
        eprintln!("AGENTD_MCP_TESTS=skip: this MCP test is skipped");
        return true;
    }
    false
}

/// The python with the `mcp` package.
pub fn python() -> String {
    match std::env::var("AGENTD_MCP_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => panic!(
            "AGENTD_MCP_PYTHON is not set: the MCP tests start servers on the official MCP Python SDK. \
             Run scripts/interop-venv.sh and set AGENTD_MCP_PYTHON=$PWD/.venv/bin/python (scripts/test.sh does), \
             or set AGENTD_MCP_TESTS=skip to skip them"
        ),
    }
}

/// The reference server's executable, installed by `npm ci` in `tests/mcp`.
pub fn everything() -> String {
    let bin = repo().join("tests/mcp/node_modules/.bin/mcp-server-everything");
    assert!(
        bin.exists(),
        "{} is missing: run `npm ci --prefix tests/mcp` (scripts/test.sh does), or set AGENTD_MCP_TESTS=skip",
        bin.display()
    );
    bin.display().to_string()
}

/// The Python server over streamable HTTP, killed when dropped.
pub struct HttpServer {
    child: Child,
    pub port: u16,
}

impl HttpServer {
    pub fn start() -> Self {
        Self::on_port(0)
    }

    /// On `port` (0: a free one), waiting until it listens.
    pub fn on_port(port: u16) -> Self {
        let mut child = Command::new(python())
            .args([server_script().as_str(), "http", "--port", &port.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the Python MCP server");
        let stdout = child.stdout.take().expect("its stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(p) = line.strip_prefix("PORT ") {
                    let _ = tx.send(p.trim().parse::<u16>().expect("a port"));
                }
            }
        });
        let port = rx.recv_timeout(Duration::from_secs(60)).expect("the Python MCP server says its port");
        Self { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Makes it forget its sessions: the next request on one is answered 404.
    pub fn forget_sessions(&self) {
        self.post("/forget-sessions", "forgotten");
    }

    /// Lets the calls of its `hold` tool answer (those waiting and later ones).
    pub fn release(&self) {
        self.post("/release", "released");
    }

    fn post(&self, path: &str, want: &str) {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        write!(
            s,
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .expect("send");
        let mut answer = String::new();
        s.read_to_string(&mut answer).expect("read");
        assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with(want), "{answer}");
    }

    /// Stops it (its sessions are gone with it).
    pub fn stop(mut self) -> u16 {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.port
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
