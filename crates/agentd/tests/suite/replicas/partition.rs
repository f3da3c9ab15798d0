//! A holder cut from the database (a loopback TCP proxy this test controls
//! sits between r1 and PostgreSQL): it cannot renew, so it gives its run up
//! on its local deadline, before the lease expires in the database and
//! another replica adopts the turn; its `/readyz` says the database does
//! not answer.

use super::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Forwards loopback connections to `target` until cut; once cut, every
/// open connection is dropped and new ones are closed at once.
struct Proxy {
    port: u16,
    cut: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

impl Proxy {
    async fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let cut = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let (cut2, conns2) = (cut.clone(), conns.clone());
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if cut2.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                conns2.lock().unwrap().push(tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(("127.0.0.1", target)).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                }));
            }
        });
        Proxy { port, cut, conns, accept }
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            c.abort();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

/// The timestamp opening the first log line containing `what`.
fn logged_at(log: &str, what: &str) -> String {
    let line = log.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("no {what:?} in:\n{log}"));
    line.split_whitespace().next().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_cut_from_the_database_stops_its_run_before_another_replica_adopts_it() {
    let Some(db_port) = database_port() else { return };
    let proxy = Proxy::start(db_port).await;
    let adopter = json!([{"text": "Adopted."}]);
    let r1 = json!([tool_step("c1", 0), {"text": "r1 finished it.", "delay_ms": 60_000}]);
    let Some(rs) = Replicas::start_via([r1, adopter.clone(), adopter], Some(proxy.port)).await else {
        return;
    };
    let id = start_turn(&rs.r[0].d, "find it").await;
    rs.r[0].wait_calls(2).await;
    proxy.cut();
    let r1_log = rs.r[0].wait_log(&["lease lost"]).await;
    let (done, _) = wait_end(&rs.r[1].d, &id, Duration::from_secs(30)).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(reply(&done), "Adopted.", "{done}");
    let adopters = format!("{}{}", rs.r[1].d.log(), rs.r[2].d.log());
    let stopped = logged_at(&r1_log, "lease lost");
    let adopted = logged_at(&adopters, "adopting a task whose lease expired");
    assert!(stopped < adopted, "r1 stopped at {stopped}, the turn was adopted at {adopted}");
    assert!(r1_log.contains("not renewed in time"), "{r1_log}");
    assert_eq!(rs.r[0].recorded().len(), 2, "r1 made no model call after the cut");
    // r1 says it cannot reach the database.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = reqwest::get(format!("{}/readyz", rs.r[0].d.url)).await.expect("readyz");
        let code = answer.status().as_u16();
        let ready: Value = answer.json().await.expect("readyz body");
        if code == 503 && ready["checks"]["store"]["ok"] == json!(false) {
            break;
        }
        assert!(Instant::now() < deadline, "r1 stays ready: {ready}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
