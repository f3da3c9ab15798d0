//! `agentd chat` driven through its stdin, a line at a time, against a
//! real daemon: one conversation, `/context` and `/new`, a gate answered
//! field by field, steering while a turn runs, `/quit`.

use super::exit_codes::scripted;
use super::{WITHIN, agentd_cmd, wait_exit};
use crate::common::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

struct Chat {
    child: Child,
    stdin: ChildStdin,
    out: mpsc::Receiver<String>,
    err: Arc<Mutex<String>>,
}

impl Chat {
    fn start(url: &str) -> Chat {
        let mut child = agentd_cmd(url, &["chat"], &[]).stdin(Stdio::piped()).spawn().expect("spawn chat");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, out) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let err = Arc::new(Mutex::new(String::new()));
        let (mut stderr, sink) = (child.stderr.take().unwrap(), err.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Chat { child, stdin, out, err }
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write to chat");
        self.stdin.flush().unwrap();
    }

    fn line(&self) -> String {
        self.out.recv_timeout(WITHIN).unwrap_or_else(|_| panic!("no line; stderr: {}", self.stderr()))
    }

    fn stderr(&self) -> String {
        self.err.lock().unwrap().clone()
    }

    /// Waits until stderr shows `text`.
    fn wait_stderr(&self, text: &str) {
        let deadline = Instant::now() + WITHIN;
        while !self.stderr().contains(text) {
            assert!(Instant::now() < deadline, "stderr never showed {text:?}: {}", self.stderr());
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[tokio::test]
async fn chat_keeps_one_conversation_and_answers_a_gate_field_by_field() {
    let d = Daemon::start(&[]);
    let mut chat = Chat::start(&d.url);
    chat.say("hello");
    assert_eq!(chat.line(), "echo: hello");
    chat.say("/context");
    let ctx = chat.line();
    chat.say("again");
    assert_eq!(chat.line(), "echo: again");
    let list = d.call("ListTasks", json!({"contextId": ctx})).await;
    assert_eq!(list["tasks"].as_array().map(Vec::len), Some(2), "both turns in one context: {list}");

    chat.say("/new");
    chat.say("fresh");
    assert_eq!(chat.line(), "echo: fresh");
    chat.say("/context");
    assert_ne!(chat.line(), ctx, "/new starts another conversation");

    // The demo's gate asks for its fields; a wrong one is asked again.
    chat.say("/run demo");
    assert!(chat.line().starts_with("Approve the demo run?"));
    chat.wait_stderr("approve (yes/no): ");
    chat.say("maybe");
    chat.wait_stderr("approve: answer yes or no");
    chat.say("yes");
    chat.wait_stderr("note (text, optional): ");
    chat.say("ship it");
    let reply = chat.line();
    assert!(
        reply.contains(r#"{"approve":true,"note":"ship it"}"#),
        "the run went on with the answer: {reply}"
    );

    chat.say("/quit");
    assert_eq!(wait_exit(&mut chat.child, WITHIN), 0, "{}", chat.stderr());
}

#[tokio::test]
async fn a_line_typed_while_a_turn_runs_steers_it() {
    let script = "- deltas: [\"Let me \", \"look.\"]\n  delay_ms: 1500\n  tool_calls: [{name: lookup, arguments: {q: x}}]\n- text: Done.\n";
    let (d, _script) = scripted(script);
    let mut chat = Chat::start(&d.url);
    chat.say("start");
    let deadline = Instant::now() + WITHIN;
    let id = loop {
        let list = d.call("ListTasks", json!({"status": "TASK_STATE_WORKING"})).await;
        if let Some(id) = list["tasks"][0]["id"].as_str() {
            break id.to_owned();
        }
        assert!(Instant::now() < deadline, "the turn never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    chat.say("also check the logs");
    chat.wait_stderr("(queued for the next step)");
    let t = wait_for_state(&d, &id, "TASK_STATE_COMPLETED", WITHIN).await;
    let texts: Vec<&str> = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_USER")
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(texts, ["start", "also check the logs"], "{t}");
    let err = chat.err.clone();
    drop(chat.stdin);
    assert_eq!(wait_exit(&mut chat.child, WITHIN), 0, "end of input ends the chat: {}", err.lock().unwrap());
}
