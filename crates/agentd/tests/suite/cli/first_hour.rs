//! The first hour of a new user: `init` + `check` + `serve`, naming the
//! agent, `status`, `token new`, `completions`, `send --continue`, the
//! command-op verbs, inline `tasks watch`, readiness and error wording.

use super::exit_codes::scripted;
use super::{WITHIN, agentd, agentd_cmd, agentd_env, json_of, ok, wait_output};
use crate::common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::Command;
use std::time::{Duration, Instant};

async fn card(d: &Daemon) -> Value {
    let url = format!("{}/.well-known/agent-card.json", d.url);
    reqwest::get(&url).await.expect("GET the card").json().await.expect("a JSON card")
}

/// `agentd ARGS` that needs no daemon.
fn local(args: &[&str]) -> super::Out {
    wait_output(
        Command::new(env!("CARGO_BIN_EXE_agentd"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
        WITHIN,
    )
}

#[tokio::test]
async fn init_writes_a_document_check_accepts_and_serve_names_the_agent_after() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-agent");
    let dir_s = dir.to_str().unwrap();
    let out = ok(local(&["init", dir_s]));
    let doc = dir.join("agent.md");
    let config = dir.join("agentd.yaml");
    assert_eq!(out.stdout, format!("{}\n{}\n", doc.display(), config.display()));
    assert!(out.stderr.contains("agentd check") && out.stderr.contains("agentd serve --config"), "{out:?}");

    // Nothing is overwritten.
    let again = local(&["init", dir_s]);
    assert_eq!(again.code, 1, "{again:?}");
    assert!(again.stderr.contains("agent.md exists") && again.stderr.contains("--force"), "{again:?}");

    let out = ok(local(&["check", doc.to_str().unwrap()]));
    assert!(out.stdout.starts_with("ok: "), "{out:?}");

    // Served with --instruction: the card carries the document's title and first paragraph.
    let d = Daemon::start(&["--instruction", doc.to_str().unwrap()]);
    let c = card(&d).await;
    assert_eq!(c["name"], "My agent", "{c}");
    assert_eq!(
        c["description"],
        "An assistant that answers questions about our services, briefly and accurately."
    );
    assert!(c.get("provider").is_none(), "no provider unless the operator names one: {c}");
    drop(d);

    // Served with the config init wrote (it names the document), and a
    // `card:` section that wins over the document.
    let text = std::fs::read_to_string(&config).unwrap()
        + "card:\n  name: Ticket triage\n  provider: {organization: Example Corp, url: https://example.com}\n  documentation_url: https://example.com/docs/triage\n";
    std::fs::write(&config, text).unwrap();
    let d = Daemon::start(&["--config", config.to_str().unwrap()]);
    let c = card(&d).await;
    assert_eq!(c["name"], "Ticket triage", "{c}");
    assert_eq!(
        c["description"],
        "An assistant that answers questions about our services, briefly and accurately."
    );
    assert_eq!(c["provider"], json!({"organization": "Example Corp", "url": "https://example.com"}));
    assert_eq!(c["documentationUrl"], "https://example.com/docs/triage");
    drop(d);

    // AGENTD_INSTRUCTION names the document too.
    let data = tmp.path().join("data");
    let d = Daemon::start_with_env(&data, &[], &[("AGENTD_INSTRUCTION", doc.to_str().unwrap())]);
    assert_eq!(card(&d).await["name"], "My agent");
}

/// The config `init DIR` writes reads its paths from its own directory:
/// served from another directory (with a relative `--config`) or from
/// inside DIR, it runs the document beside it on the data beside it, and
/// leaves nothing where it was started.
#[tokio::test]
async fn an_init_config_serves_the_same_agent_from_any_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-agent");
    ok(local(&["init", dir.to_str().unwrap()]));
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let data = dir.join(".agentd");
    let runs = [(&elsewhere, "../my-agent/agentd.yaml", "one"), (&dir, "agentd.yaml", "two")];
    for (n, (cwd, config, text)) in runs.into_iter().enumerate() {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentd"));
        cmd.current_dir(cwd).args(["serve", "--listen", "127.0.0.1:0", "--config", config]);
        cmd.env("AGENTD_LOG", "info").env_remove("AGENTD_DATA_DIR").env_remove("AGENTD_INSTRUCTION");
        let mut d = Daemon::spawn(cmd, &data);
        assert_eq!(card(&d).await["name"], "My agent", "the document beside the config, from {cwd:?}");
        ok(agentd(&d.url, &["send", text]));
        let tasks = json_of(&ok(agentd(&d.url, &["tasks", "list", "--json"])));
        assert_eq!(tasks["tasks"].as_array().unwrap().len(), n + 1, "one database for both: {tasks}");
        assert!(d.stop().success(), "{}", d.log());
        assert!(data.join("agentd.db").exists(), "the data beside the config");
    }
    assert!(!elsewhere.join(".agentd").exists(), "nothing where it was started");

    // Without --config the file beside it is not read, and serve says so.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentd"));
    cmd.current_dir(&dir).args(["serve", "--listen", "127.0.0.1:0"]);
    cmd.env("AGENTD_LOG", "info").env_remove("AGENTD_CONFIG");
    let d = Daemon::spawn(cmd, &data);
    assert!(d.log().contains("./agentd.yaml is not read without --config"), "{}", d.log());
}

/// `--listen localhost:PORT` is resolved; a name that does not resolve is
/// a usage error naming it.
#[test]
fn listen_takes_a_host_name() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentd"));
    cmd.args(["serve", "--listen", "localhost:0", "--data-dir", data.to_str().unwrap()]);
    cmd.env("AGENTD_LOG", "info");
    let d = Daemon::spawn(cmd, &data);
    assert!(d.url.starts_with("http://127.0.0.1:"), "{}", d.url);
    assert_eq!(ok(agentd(&d.url, &["send", "hello"])).stdout, "echo: hello\n");
    drop(d);

    let out =
        local(&["serve", "--listen", "no-such-host.invalid:7420", "--data-dir", data.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("\"no-such-host.invalid\" does not resolve"), "{out:?}");
    let out = local(&["serve", "--listen", "localhost", "--data-dir", data.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("is not HOST:PORT"), "{out:?}");
}

/// An address in use stops `serve` saying so, before the data directory
/// (or its database) is made.
#[test]
fn an_address_in_use_leaves_no_data_directory_behind() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let data_s = data.to_str().unwrap();
    let main: [&str; 2] = ["--listen", &addr];
    let metrics: [&str; 4] = ["--listen", "127.0.0.1:0", "--metrics-listen", &addr];
    for args in [&main[..], &metrics[..]] {
        let out = local(&[&["serve", "--data-dir", data_s][..], args].concat());
        assert_eq!(out.code, 1, "{out:?}");
        assert!(out.stderr.contains(&format!("cannot listen on {addr}")), "{out:?}");
        assert!(out.stderr.contains("the address is in use"), "{out:?}");
        assert!(!data.exists(), "nothing made before the bind: {args:?}");
    }
}

/// The built-in agent's card describes it to clients (not its prompt,
/// which speaks to the model); a configured description still wins.
#[tokio::test]
async fn the_default_agent_describes_itself_to_clients() {
    let d = Daemon::start(&[]);
    let description = card(&d).await["description"].as_str().unwrap().to_owned();
    assert!(description.starts_with("A general-purpose assistant"), "{description}");
    assert!(!description.contains("You are"), "{description}");
    drop(d);
    let tmp = tempfile::tempdir().unwrap();
    let config = write_config(tmp.path(), "card: {description: Answers questions about our services.}\n");
    let d = Daemon::start(&["--config", config.to_str().unwrap()]);
    assert_eq!(card(&d).await["description"], "Answers questions about our services.");
}

#[test]
fn check_says_how_to_grant_a_family() {
    // Its `:::!human[]` table needs the interface family.
    let doc =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../agentd-instruction/examples/agent.md");
    let out = local(&["check", doc.to_str().unwrap()]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("agentd check --grant interface"), "{out:?}");
    assert!(!out.stderr.contains("document_capabilities"), "a key agentd has not: {out:?}");
    ok(local(&["check", doc.to_str().unwrap(), "--grant", "interface"]));
}

#[test]
fn status_prints_the_daemon_and_who_asks() {
    let d = Daemon::start(&[]);
    let out = ok(agentd(&d.url, &["status"]));
    let line = out.stdout.trim_end();
    assert!(line.starts_with(&format!("agentd {} up ", env!("CARGO_PKG_VERSION"))), "{out:?}");
    assert!(line.contains("model echo") && line.ends_with("you: operator:local (operator)"), "{out:?}");
    let v = json_of(&ok(agentd(&d.url, &["status", "--json"])));
    assert_eq!(v["message"]["parts"][0]["data"]["principal"]["role"], "operator", "{v}");
}

#[test]
fn completions_are_generated_for_each_shell() {
    let out = ok(local(&["completions", "bash"]));
    assert!(out.stdout.contains("_agentd()") && out.stdout.contains("chat"), "{}", &out.stdout[..200]);
    let out = ok(local(&["completions", "zsh"]));
    assert!(out.stdout.starts_with("#compdef agentd"), "{}", &out.stdout[..100]);
    ok(local(&["completions", "fish"]));
    let out = local(&["completions", "tcsh"]);
    assert_eq!(out.code, 2, "an unknown shell is a usage error: {out:?}");
}

#[test]
fn token_new_prints_a_config_serve_accepts_and_the_token_it_admits() {
    let out = ok(local(&["token", "new", "--id", "user:alice", "--role", "user"]));
    let token = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("#   "))
        .unwrap_or_else(|| panic!("the token is shown: {out:?}"))
        .to_owned();
    assert!(!out.stdout.contains("…"), "no placeholder: {out:?}");
    let tmp = tempfile::tempdir().unwrap();
    let config = write_config(tmp.path(), &out.stdout);
    let d = Daemon::start_in(&tmp.path().join("data"), &["--config", config.to_str().unwrap()]);
    let out = ok(agentd_env(&d.url, &["send", "hello"], &[("AGENTD_TOKEN", &token)]));
    assert_eq!(out.stdout, "echo: hello\n");
    let out = agentd(&d.url, &["status", "--token", &token]);
    assert!(out.stdout.contains("you: user:alice (user)"), "{out:?}");
    let out = agentd(&d.url, &["send", "--token", "agentd_0000", "hello"]);
    assert_eq!(out.code, 1, "{out:?}");

    // Two tokens are never the same; the JSON form has the digest too.
    let a = json_of(&ok(local(&["token", "new", "--json"])));
    let b = json_of(&ok(local(&["token", "new", "--json"])));
    assert_ne!(a["token"], b["token"]);
    assert_eq!(a["sha256"].as_str().unwrap().len(), 64, "{a}");
    // A role that is none is a usage error, listing the roles there are.
    let bad = local(&["token", "new", "--role", "boss"]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(bad.stderr.contains("'boss'") && bad.stderr.contains("operator, user, agent"), "{bad:?}");
}

#[test]
fn send_continue_carries_on_the_last_conversation() {
    let d = Daemon::start(&[]);
    let out = agentd(&d.url, &["send", "--continue", "hi"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("no conversation to continue"), "{out:?}");

    let out = ok(agentd(&d.url, &["send", "one"]));
    assert!(out.stderr.contains("continue with: agentd send --continue"), "the hint: {out:?}");
    let first = json_of(&ok(agentd(&d.url, &["tasks", "list", "--json"])))["tasks"][0].clone();
    // A subagent's task, newer, in a context of its own: not a conversation
    // of the caller's to carry on.
    ok(agentd(&d.url, &["subagents", "spawn", "--instruction", "x", "sub work"]));
    let out = ok(agentd(&d.url, &["send", "--continue", "two"]));
    assert_eq!(out.stdout, "echo: two\n");
    let list = json_of(&ok(agentd(&d.url, &["tasks", "list", "--json"])));
    assert_eq!(list["tasks"][0]["contextId"], first["contextId"], "{list}");
    assert_ne!(list["tasks"][0]["id"], first["id"]);
    let out = agentd(&d.url, &["send", "--continue", "--context", "x", "three"]);
    assert_eq!(out.code, 2, "--continue or --context: {out:?}");
}

#[tokio::test]
async fn send_to_a_working_task_says_the_input_is_queued() {
    let (d, _script) = scripted("- {text: slow, delay_ms: 60000}\n");
    let child = agentd_cmd(&d.url, &["send", "start"], &[]).spawn().unwrap();
    let deadline = Instant::now() + WITHIN;
    let id = loop {
        let list = d.call("ListTasks", json!({"status": "TASK_STATE_WORKING"})).await;
        if let Some(id) = list["tasks"][0]["id"].as_str() {
            break id.to_owned();
        }
        assert!(Instant::now() < deadline, "no task started working");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (url, task) = (d.url.clone(), id.clone());
    let out = tokio::task::spawn_blocking(move || {
        agentd(&url, &["send", "--task", &task, "--no-wait", "also this"])
    })
    .await
    .unwrap();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains(&format!("task {id} is WORKING: this input is queued for its next step")),
        "{out:?}"
    );
    d.call("CancelTask", json!({"id": id})).await;
    tokio::task::spawn_blocking(move || wait_output(child, WITHIN)).await.unwrap();
}

#[test]
fn the_command_op_verbs_reach_their_ops() {
    let d = Daemon::start(&[]);
    let out = ok(agentd(
        &d.url,
        &["subagents", "spawn", "--name", "helper", "--instruction", "Be brief.", "hello"],
    ));
    let id = out.stdout.trim().to_owned();
    assert!(!id.is_empty() && !id.contains(' '), "the task id: {out:?}");
    // --json: the daemon's answer, the op's data in its one DataPart.
    let data = |args: &[&str]| {
        let v = json_of(&ok(agentd(&d.url, &[args, &["--json"][..]].concat())));
        v["message"]["parts"][0]["data"].clone()
    };
    let deadline = Instant::now() + WITHIN;
    let status = loop {
        let v = data(&["subagents", "status", &id]);
        if v["state"] == "TASK_STATE_COMPLETED" {
            break v;
        }
        assert!(Instant::now() < deadline, "the subagent never completed: {v}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status["handle"], format!("helper-{id}"), "{status}");
    // Without --json, a record a person reads.
    let out = ok(agentd(&d.url, &["subagents", "status", &id]));
    assert!(out.stdout.starts_with(&format!("handle   helper-{id}\n")), "{out:?}");
    assert!(
        out.stdout.contains("state    COMPLETED\n") && out.stdout.ends_with("\necho: hello\n"),
        "{out:?}"
    );
    let context = status["contextId"].as_str().unwrap().to_owned();
    let conv = data(&["conversations", "get", &context]);
    assert_eq!(conv["turns"][0]["taskId"], id.as_str(), "{conv}");
    let out = ok(agentd(&d.url, &["conversations", "get", &context]));
    assert_eq!(
        out.stdout,
        format!("context  {context}\n\n{id}  COMPLETED\n  user: hello\n  agent: echo: hello\n"),
        "{out:?}"
    );
    let out = ok(agentd(&d.url, &["conversations", "close", &context]));
    assert!(out.stdout.starts_with(&format!("context  {context} (closed)\n")), "{out:?}");
    assert_eq!(data(&["conversations", "get", &context])["closed"], true);

    ok(agentd(&d.url, &["run", "demo"]));
    let run = json_of(&ok(agentd(&d.url, &["tasks", "list", "--json"])))["tasks"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let st = data(&["workflows", "status", &run]);
    assert_eq!(st["gate"]["step"], "approve", "{st}");
    let out = ok(agentd(&d.url, &["workflows", "status", &run]));
    assert!(
        out.stdout.contains("state    INPUT_REQUIRED\ngate     approve: Approve the demo run?"),
        "{out:?}"
    );
    let steps: Vec<Vec<&str>> = out
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("STEP"))
        .skip(1)
        .map(|l| l.split_whitespace().take(3).collect())
        .collect();
    assert_eq!(
        steps,
        [["approve", "human", "waiting"], ["summarize", "agent", "pending"], ["done", "finish", "pending"]],
        "{out:?}"
    );
    let out = ok(agentd(&d.url, &["gates"]));
    assert_eq!(out.stdout, "", "no gate addressed to the operator on others' tasks: {out:?}");
    assert!(out.stderr.contains("no open gates addressed to you"), "{out:?}");
    let out = ok(agentd(&d.url, &["workflows", "cancel", &run]));
    assert!(out.stdout.contains("state    CANCELED\n"), "{out:?}");
    let out = agentd(&d.url, &["subagents", "status", "no-such"]);
    assert_eq!(out.code, 1, "{out:?}");
}

#[test]
fn watch_shows_streamed_text_inline() {
    let d = Daemon::start(&["--agent", "tck"]);
    let id = uniq("tck-input-required");
    let task =
        json_of(&ok(agentd(&d.url, &["send", "--json", "--message-id", &id, "hello"])))["task"].clone();
    let id = task["id"].as_str().unwrap().to_owned();
    let mut watch = agentd_cmd(&d.url, &["tasks", "watch", &id], &[]).spawn().unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "INPUT_REQUIRED: Please provide more input");
    // The next turn streams one artifact in two chunks.
    let chunked = uniq("tck-stream-artifact-chunked");
    ok(agentd(&d.url, &["send", "--task", &id, "--message-id", &chunked, "go"]));
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let code = super::wait_exit(&mut watch, WITHIN);
    assert_eq!(code, 0);
    assert!(
        rest.contains(&"chunk-1 chunk-2".to_owned()),
        "one line for the artifact, not one per chunk: {rest:?}"
    );
    assert_eq!(rest.last().map(String::as_str), Some("COMPLETED"), "{rest:?}");
}

/// `tasks watch` joining a turn under way prints its reply once and whole:
/// what was streamed before it subscribed, the rest as it comes, then the
/// final state without the status message that repeats the reply.
#[tokio::test]
async fn watch_prints_a_streamed_reply_once() {
    // The pause between the halves is the time the watch has to join: long
    // enough for a CLI process to start on a loaded machine.
    let (d, _script) = scripted("- {deltas: ['first half, ', 'second half'], delay_ms: 5000}\n");
    ok(agentd(&d.url, &["send", "--no-wait", "go"]));
    let id = d.call("ListTasks", json!({})).await["tasks"][0]["id"].as_str().unwrap().to_owned();
    // The watch joins once the first half is committed, a delay before the second.
    let deadline = Instant::now() + WITHIN;
    loop {
        let t = d.call("GetTask", json!({"id": id})).await;
        if t["artifacts"][0]["parts"][0]["text"] == "first half, " {
            break;
        }
        assert!(Instant::now() < deadline, "the first half never came: {t}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let watch = agentd_cmd(&d.url, &["tasks", "watch", &id], &[]).spawn().unwrap();
    let out = tokio::task::spawn_blocking(move || wait_output(watch, WITHIN)).await.unwrap();
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines, ["WORKING", "first half, second half", "COMPLETED"], "{out:?}");
}

#[tokio::test]
async fn readiness_reports_an_unreachable_model_server() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let endpoint = format!("http://127.0.0.1:{port}/v1");
    let d = Daemon::start(&["--model", "openai", "--model-url", &endpoint, "--model-name", "m"]);
    let deadline = Instant::now() + WITHIN;
    let body = loop {
        let r = reqwest::get(format!("{}/readyz", d.url)).await.unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap();
        if body["checks"]["model"]["detail"] != "not probed yet" {
            assert_eq!(status, 503, "{body}");
            break body;
        }
        assert!(Instant::now() < deadline, "never probed: {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(body["ready"], false);
    assert!(
        body["checks"]["model"]["detail"].as_str().unwrap().contains(&format!("{endpoint}/models")),
        "{body}"
    );
    let log = d.log();
    assert!(log.contains("WARN") && log.contains("cannot be reached"), "{log}");
    assert!(
        log.contains("with the openai model") && log.contains(&endpoint),
        "start-up says what it runs: {log}"
    );

    // The echo model has nothing to reach: ready at once.
    let d = Daemon::start(&[]);
    let r = reqwest::get(format!("{}/readyz", d.url)).await.unwrap();
    assert_eq!(r.status(), 200);
}

#[test]
fn mistakes_get_messages_that_say_what_to_do() {
    // --model openai without an endpoint names --model-url.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let data_s = data.to_str().unwrap();
    let out = local(&["serve", "--data-dir", data_s, "--listen", "127.0.0.1:0", "--model", "openai"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("--model-url"), "{out:?}");

    // A data directory that is a file.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = local(&["serve", "--data-dir", file.to_str().unwrap(), "--listen", "127.0.0.1:0"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("is a file, not a directory"), "{out:?}");

    // An invalid log filter is an error, not silently `info`.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentd"));
    cmd.args(["serve", "--data-dir", data_s, "--listen", "127.0.0.1:0"]).env("AGENTD_LOG", "verbose");
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("AGENTD_LOG") && err.contains("\"verbose\" is not a level"), "{err}");

    // --url at something that is not agentd names it and says so.
    let d = Daemon::start(&[]);
    let url = format!("{}/not-agentd", d.url);
    let out = agentd(&url, &["send", "hi"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains(&url) && out.stderr.contains("may not be an agentd daemon"), "{out:?}");
}

#[tokio::test]
async fn an_a2a_0_3_method_name_gets_a_hint() {
    let d = Daemon::start(&[]);
    let r = d.rpc("message/send", send_params("m1", "hi", None)).await;
    assert_rpc_error(&r, -32601, None);
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("A2A 1.0") && msg.contains("\"SendMessage\""), "{msg}");
}

#[tokio::test]
async fn each_request_is_logged_at_debug() {
    let tmp = tempfile::tempdir().unwrap();
    let d = Daemon::start_with_env(tmp.path(), &[], &[("AGENTD_LOG", "debug")]);
    d.call("ListTasks", json!({})).await;
    let deadline = Instant::now() + WITHIN;
    while !d.log().contains("path=/a2a/jsonrpc status=200") {
        assert!(Instant::now() < deadline, "no request line: {}", d.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Each request has an id: the client's, or a fresh one; the answer
    // carries it and the request's log lines name it.
    let http = reqwest::Client::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let is_uuid = |s: &str| {
        s.len() == 36
            && s.char_indices()
                .all(|(i, c)| if [8, 13, 18, 23].contains(&i) { c == '-' } else { c.is_ascii_hexdigit() })
    };
    let given =
        http.post(d.jsonrpc_url()).header("x-request-id", "trace-42").json(&body).send().await.unwrap();
    assert_eq!(given.headers()["x-request-id"], "trace-42");
    let rest = http.get(d.rest_url("/tasks")).header("x-request-id", "trace-43").send().await.unwrap();
    assert_eq!(rest.headers()["x-request-id"], "trace-43");
    for odd in ["has space", &"x".repeat(129)] {
        let r = http.post(d.jsonrpc_url()).header("x-request-id", odd).json(&body).send().await.unwrap();
        let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
        assert!(id != odd && is_uuid(&id), "{odd:?} became {id:?}");
    }
    let fresh = http.post(d.jsonrpc_url()).json(&body).send().await.unwrap();
    let fresh = fresh.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(is_uuid(&fresh), "{fresh}");
    for id in ["trace-42", "trace-43", fresh.as_str()] {
        let deadline = Instant::now() + WITHIN;
        while !d.log().lines().any(|l| l.contains(&format!("request{{id={id}}}")) && l.contains("status=200"))
        {
            assert!(Instant::now() < deadline, "no request line naming {id}: {}", d.log());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Unmounts a bind mount when the test ends, whatever happens.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_read_only_data_directory_is_named_with_its_cause() {
    // A read-only view of a data directory that holds a database (a bind
    // mount: as root, file modes would not stop the writes).
    let tmp = tempfile::tempdir().unwrap();
    let (rw, ro) = (tmp.path().join("rw"), tmp.path().join("ro"));
    std::fs::create_dir_all(&ro).unwrap();
    drop(Daemon::start_in(&rw, &[]));
    let mount = |args: &[&str]| Command::new("mount").args(args).status().is_ok_and(|s| s.success());
    assert!(mount(&["--bind", rw.to_str().unwrap(), ro.to_str().unwrap()]), "this test needs mount (root)");
    let _guard = Mounted(ro.clone());
    assert!(mount(&["-o", "remount,ro,bind", ro.to_str().unwrap()]), "remount read-only");
    let out = local(&["serve", "--data-dir", ro.to_str().unwrap(), "--listen", "127.0.0.1:0"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("is not writable") && out.stderr.contains("Read-only file system"),
        "the cause reaches the user: {out:?}"
    );
}
