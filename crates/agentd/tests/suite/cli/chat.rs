//! `agentd chat` driven through its stdin, a line at a time, against a
//! real daemon: one conversation, `/context` and `/new`, a gate answered
//! field by field, piped input taken strictly in order, steering while a
//! turn runs at a terminal, `/quit`.

use super::exit_codes::scripted;
use super::{Out, WITHIN, agentd_cmd, wait_exit, wait_output};
use crate::common::*;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

struct Chat {
    child: Child,
    stdin: Box<dyn Write>,
    out: mpsc::Receiver<String>,
    err: Arc<Mutex<String>>,
}

impl Chat {
    fn start(url: &str) -> Chat {
        let mut child = agentd_cmd(url, &["chat"], &[]).stdin(Stdio::piped()).spawn().expect("spawn chat");
        let stdin = Box::new(child.stdin.take().unwrap());
        Chat::attach(child, stdin)
    }

    /// `agentd chat` with a terminal (a pseudo-terminal) as its stdin.
    fn at_terminal(url: &str) -> Chat {
        let pty = nix::pty::openpty(None, None).expect("openpty");
        let child =
            agentd_cmd(url, &["chat"], &[]).stdin(Stdio::from(pty.slave)).spawn().expect("spawn chat");
        let mut master = std::fs::File::from(pty.master);
        // The terminal echoes what is typed back to this end: drain it.
        let mut echo = master.try_clone().unwrap();
        std::thread::spawn(move || std::io::copy(&mut echo, &mut std::io::sink()));
        master.flush().unwrap();
        Chat::attach(child, Box::new(master))
    }

    fn attach(mut child: Child, stdin: Box<dyn Write>) -> Chat {
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

/// `agentd chat` with all of `input` piped in at once.
fn piped(url: &str, input: &str) -> Out {
    let mut child = agentd_cmd(url, &["chat"], &[]).stdin(Stdio::piped()).spawn().expect("spawn chat");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    wait_output(child, WITHIN)
}

/// The user texts of every task's history, oldest task first.
async fn user_texts(d: &Daemon) -> Vec<String> {
    let list = d.call("ListTasks", json!({"historyLength": 10})).await;
    let mut texts = Vec::new();
    for t in list["tasks"].as_array().unwrap().iter().rev() {
        for m in t["history"].as_array().into_iter().flatten().filter(|m| m["role"] == "ROLE_USER") {
            texts.extend(m["parts"][0]["text"].as_str().map(str::to_owned));
        }
    }
    texts
}

#[tokio::test]
async fn piped_lines_are_turns_in_order_and_commands_stay_commands() {
    let d = Daemon::start(&[]);
    let out = piped(&d.url, "alpha\nbeta\n/context\ngamma\n/quit\nnever\n");
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{out:?}");
    assert_eq!([lines[0], lines[1], lines[3]], ["echo: alpha", "echo: beta", "echo: gamma"], "{out:?}");
    let list = d.call("ListTasks", json!({"contextId": lines[2]})).await;
    assert_eq!(list["tasks"].as_array().map(Vec::len), Some(3), "/context printed the conversation: {list}");
    assert_eq!(user_texts(&d).await, ["alpha", "beta", "gamma"], "no command reached the model");
    assert!(!out.stderr.contains("queued") && !out.stderr.contains("not delivered"), "{out:?}");
}

#[tokio::test]
async fn a_piped_gate_answer_answers_the_gate() {
    let d = Daemon::start(&[]);
    let out = piped(&d.url, "/run demo\nyes\nship it\nafter\n");
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("Approve the demo run?"), "{out:?}");
    assert!(
        out.stdout.contains(r#"{"approve":true,"note":"ship it"}"#),
        "the run went on with the answer: {out:?}"
    );
    assert_eq!(lines.last(), Some(&"echo: after"), "the next line is the next turn: {out:?}");
}

/// Waits until a task of `d` is WORKING; its id.
async fn working_task(d: &Daemon) -> String {
    let deadline = Instant::now() + WITHIN;
    loop {
        let list = d.call("ListTasks", json!({"status": "TASK_STATE_WORKING"})).await;
        if let Some(id) = list["tasks"][0]["id"].as_str() {
            return id.to_owned();
        }
        assert!(Instant::now() < deadline, "the turn never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_line_typed_while_a_turn_runs_steers_it_and_a_command_waits() {
    let script = "- deltas: [\"Let me \", \"look.\"]\n  delay_ms: 1500\n  tool_calls: [{name: lookup, arguments: {q: x}}]\n- text: Done.\n";
    let (d, _script) = scripted(script);
    let mut chat = Chat::at_terminal(&d.url);
    chat.say("start");
    let id = working_task(&d).await;
    chat.say("also check the logs");
    chat.wait_stderr("(queued for the next step)");
    chat.say("/context");
    chat.wait_stderr("(a command; kept for after this turn: /context)");
    let t = wait_for_state(&d, &id, "TASK_STATE_COMPLETED", WITHIN).await;
    let texts: Vec<&str> = t["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_USER")
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(texts, ["start", "also check the logs"], "{t}");
    let shown: Vec<String> = (0..4).map(|_| chat.line()).filter(|l| !l.is_empty()).collect();
    let ctx = t["contextId"].as_str().unwrap();
    assert_eq!(shown, ["Let me look.", "Done.", ctx], "/context ran after the turn");
    // Ctrl-D: the end of input at a terminal ends the chat.
    write!(chat.stdin, "\x04").unwrap();
    chat.stdin.flush().unwrap();
    assert_eq!(wait_exit(&mut chat.child, WITHIN), 0, "{}", chat.stderr());
}
