//! The examples of `docs/tools.md` are what agentd reads: the config
//! example loads and each of its servers is valid; the `!mcp` block of the
//! document example becomes the server it describes.

use agentd_mcp::{Action, Human, McpConfig, Origin, Policies, TransportSpec, from_config, from_document};

fn page() -> String {
    std::fs::read_to_string(crate::servers::repo().join("docs/tools.md")).expect("docs/tools.md")
}

/// The body of the first fenced block of `lang`.
fn block(text: &str, lang: &str) -> String {
    let open = format!("```{lang}\n");
    let start = text.find(&open).unwrap_or_else(|| panic!("a {lang} block")) + open.len();
    let len = text[start..].find("```").expect("its end");
    text[start..start + len].to_owned()
}

#[test]
fn the_config_example_loads_and_each_server_is_valid() {
    #[derive(serde::Deserialize)]
    struct Doc {
        mcp: McpConfig,
    }
    let doc: Doc = serde_yaml_ng::from_str(&block(&page(), "yaml")).expect("the example is a config");
    assert_eq!(doc.mcp.servers.len(), 2);
    let files = from_config(&doc.mcp.servers[0]).expect("valid");
    assert!(
        files.filter.admits("read_file")
            && !files.filter.admits("read_secret")
            && !files.filter.admits("write")
    );
    let everything = from_config(&doc.mcp.servers[1]).expect("valid");
    assert!(matches!(everything.transport, TransportSpec::Stdio(_)));

    // The policies: reads allowed but private ones asked about; the
    // trusted server's non-destructive tools allowed, the rest asked.
    let tool = |name: &str, destructive: Option<bool>| {
        let mut ann = rmcp::model::ToolAnnotations::default();
        ann.destructive_hint = destructive;
        rmcp::model::Tool::new(name.to_owned(), "", std::sync::Arc::new(serde_json::Map::new()))
            .with_annotations(ann)
    };
    assert_eq!(Policies::action(&files.policy, &tool("read_file", None)), Action::Allow);
    assert_eq!(Policies::action(&files.policy, &tool("read_private_key", None)), Action::Ask);
    assert_eq!(Policies::action(&everything.policy, &tool("add", Some(false))), Action::Allow);
    assert_eq!(Policies::action(&everything.policy, &tool("rm", None)), Action::Ask);
    assert_eq!(doc.mcp.approvals.timeout_secs, 1800);
    let oncall = |n: &str| (n == "oncall").then(|| Human { principal: "user:carol".into(), channel: None });
    let pairs =
        [("files".to_owned(), files.policy.clone()), ("everything".to_owned(), everything.policy.clone())];
    Policies::new(&pairs, &doc.mcp.approvals, oncall).expect("the humans it names resolve");
}

#[test]
fn the_document_example_declares_its_server_and_a_wire_document_may_not_run_a_child() {
    let text = format!("# Agent\n\nHelps.\n\n{}", block(&page(), "markdown"));
    let doc = agentd_instruction::load_with(&text, &agentd_instruction::Options::all_grants())
        .unwrap_or_else(|e| panic!("the example is a valid document: {e:?}"));
    let servers = doc.mcp_servers();
    let spec = from_document(&servers[0], &Origin::Operator).expect("valid");
    assert_eq!(spec.name, "tickets");
    assert!(!spec.filter.admits("delete_ticket") && spec.filter.admits("get_ticket"));
    let TransportSpec::Http(http) = &spec.transport else { panic!("an HTTP server") };
    assert_eq!(http.url, "http://127.0.0.1:8940/mcp");
    let auth = &http.headers[0];
    assert_eq!(
        (auth.name.as_str(), auth.prefix.as_str(), auth.secret.reference()),
        ("Authorization", "Bearer ", "env:TICKETS_TOKEN")
    );
    assert_eq!(spec.timeout.as_secs(), 10);
    let tool =
        |name: &str| rmcp::model::Tool::new(name.to_owned(), "", std::sync::Arc::new(serde_json::Map::new()));
    assert_eq!(Policies::action(&spec.policy, &tool("get_ticket")), Action::Allow);
    assert_eq!(Policies::action(&spec.policy, &tool("close_ticket")), Action::Ask);
    // From the wire, a document may not let calls through unasked.
    let guard: std::sync::Arc<dyn agentd_core::PushUrlPolicy> = std::sync::Arc::new(NoPolicy);
    let e = from_document(&servers[0], &Origin::Wire(guard.clone())).err().expect("refused");
    assert!(e.contains("may not mark a server trusted, allow its calls unasked"), "{e}");
    // Nor have its interrupted calls run again unasked.
    let rerun = "# Agent\n\nHelps.\n\n:::!mcp{name=remote endpoint=http://127.0.0.1:8940/mcp}\npolicy: {on_interrupt: retry}\n:::\n";
    let doc =
        agentd_instruction::load_with(rerun, &agentd_instruction::Options::all_grants()).expect("valid");
    let server = &doc.mcp_servers()[0];
    assert!(from_document(server, &Origin::Operator).is_ok(), "the operator may choose retry");
    let e = from_document(server, &Origin::Wire(guard.clone())).err().expect("refused");
    assert!(e.contains("on_interrupt: retry"), "{e}");
    // Marking a tool idempotent has the same effect: refused from the wire too.
    let idempotent = "# Agent\n\nHelps.\n\n:::!mcp{name=remote endpoint=http://127.0.0.1:8940/mcp}\npolicy: {idempotent: [\"send_*\"]}\n:::\n";
    let doc =
        agentd_instruction::load_with(idempotent, &agentd_instruction::Options::all_grants()).expect("valid");
    let server = &doc.mcp_servers()[0];
    assert!(from_document(server, &Origin::Operator).is_ok(), "the operator may mark tools idempotent");
    let e = from_document(server, &Origin::Wire(guard.clone())).err().expect("refused");
    assert!(e.contains("idempotent"), "{e}");

    let stdio = "# Agent\n\nHelps.\n\n:::!mcp{name=local}\nstdio: {command: mcp-files}\n:::\n";
    let doc =
        agentd_instruction::load_with(stdio, &agentd_instruction::Options::all_grants()).expect("valid");
    let server = &doc.mcp_servers()[0];
    assert!(from_document(server, &Origin::Operator).is_ok(), "the operator's document may run a child");
    let e = from_document(server, &Origin::Wire(guard)).err().expect("refused");
    assert!(e.contains("a document from the wire may not start a stdio server"), "{e}");
}

struct NoPolicy;

#[async_trait::async_trait]
impl agentd_core::PushUrlPolicy for NoPolicy {
    async fn check(&self, _url: &str) -> Result<(), String> {
        Ok(())
    }
}
