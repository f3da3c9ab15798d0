//! The decision taken before each MCP tool call (`docs/tools.md`,
//! "Policy and approvals"): `allow` makes the call, `deny` tells the model
//! why not, `ask` waits for a human's approval on the turn's task.
//!
//! Per server, the operator's rules (tool globs → action; the most
//! restrictive of those that match wins) come first, then the server's
//! `default`, then the server's own annotations as hints: a tool marked
//! `readOnlyHint: true` is allowed; on a server the operator marks
//! `trusted`, so is one marked `destructiveHint: false`, and
//! `idempotentHint` counts. Everything else asks.

use crate::glob::matches;
use agentd_runtime::agent_loop::{OnUncertain, UncertainGate};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// What a policy may say about a tool; ordered from least to most
/// restrictive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Allow,
    Ask,
    Deny,
}

/// A server's policy as configured: `mcp.servers[].policy`, or `policy:`
/// in the body of a `!mcp` block.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Tool globs (the server's own tool names) and what their calls get;
    /// when several match, the most restrictive.
    pub tools: BTreeMap<String, Action>,
    /// What a tool no glob names gets; unset: decided from the hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Action>,
    /// Believe the server's annotations beyond `readOnlyHint`.
    pub trusted: bool,
    /// The `!human` entry asked (`@human/<name>`); unset:
    /// `mcp.approvals.human`, and without that, operators only and no
    /// announcement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub human: Option<String>,
    /// Tool globs whose calls may be made again when their outcome is
    /// unknown (approved, then interrupted before the result was recorded).
    pub idempotent: Vec<String>,
    /// What a call a restart cut (started, result not recorded) gets;
    /// unset: `retry` for idempotent tools, `report` for tools that need
    /// an approval, else `fail`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_interrupt: Option<OnInterrupt>,
}

/// `policy.on_interrupt`: the uncertain-call policies of `docs/durability.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnInterrupt {
    /// Run it again with the same idempotency key.
    Retry,
    /// Fail the turn, naming the tool.
    Fail,
    /// Ask the policy's human whether to run it again.
    Ask,
    /// Tell the model "interrupted; outcome unknown" and go on.
    Report,
}

/// `mcp.approvals`: what every `ask` shares.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// Seconds a call waits for its approval before it is denied.
    pub timeout_secs: u64,
    /// The `!human` entry asked when a server's policy names none.
    pub human: Option<String>,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        Self { timeout_secs: agentd_core::approval::DEFAULT_TIMEOUT.as_secs(), human: None }
    }
}

/// A `!human` entry an approval is addressed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Human {
    /// Who answers besides the task's owner; `operator` means operators only.
    pub principal: String,
    /// Where the question is announced (`@channel/<name>`).
    pub channel: Option<String>,
}

/// Whom to ask and how long to wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    pub channel: Option<String>,
    /// Principal ids that may answer besides the owner and operators.
    pub answerers: Vec<String>,
    pub timeout: Duration,
    pub idempotent: bool,
}

/// What happens to one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// The call waits for a human's approval.
    Ask(Ask),
    /// The call is not made; the reason goes to the model.
    Deny(String),
}

pub trait ToolPolicy: Send + Sync + 'static {
    fn decide(&self, server: &str, tool: &rmcp::model::Tool, args: &Value) -> Decision;
    /// Whether a call of `tool` may be made again when its outcome is
    /// unknown (approved or started, then interrupted by a crash before its
    /// result was recorded).
    fn idempotent(&self, _server: &str, _tool: &rmcp::model::Tool) -> bool {
        false
    }
    /// What a call of `tool` a restart cut gets: by default retried when
    /// idempotent, else the turn fails.
    fn on_interrupt(&self, server: &str, tool: &rmcp::model::Tool) -> OnUncertain {
        if self.idempotent(server, tool) { OnUncertain::Retry } else { OnUncertain::Fail }
    }
}

/// Allows every call.
pub struct AllowAll;

impl ToolPolicy for AllowAll {
    fn decide(&self, _server: &str, _tool: &rmcp::model::Tool, _args: &Value) -> Decision {
        Decision::Allow
    }
}

/// The policies of a daemon's servers.
pub struct Policies {
    servers: HashMap<String, (PolicyConfig, Option<Human>)>,
    timeout: Duration,
}

/// The principal value of a `!human` entry that means operators only.
const OPERATORS: &str = "operator";

impl Policies {
    /// `servers`: each server's name and policy; `humans` resolves a
    /// `@human/<name>` reference (None: not declared).
    pub fn new(
        servers: &[(String, PolicyConfig)],
        approvals: &ApprovalsConfig,
        humans: impl Fn(&str) -> Option<Human>,
    ) -> Result<Self, String> {
        if approvals.timeout_secs == 0 {
            return Err("mcp.approvals.timeout_secs must be at least 1".into());
        }
        let resolve = |r: &str, at: &str| {
            let name = r.strip_prefix("@human/").unwrap_or(r);
            humans(name)
                .ok_or_else(|| format!("{at} names {r:?}, but no !human entry of that name is declared"))
        };
        let fallback = approvals.human.as_deref().map(|h| resolve(h, "mcp.approvals.human")).transpose()?;
        let mut out = HashMap::new();
        for (name, p) in servers {
            let human = match &p.human {
                Some(h) => Some(resolve(h, &format!("the policy of MCP server {name}"))?),
                None => fallback.clone(),
            };
            out.insert(name.clone(), (p.clone(), human));
        }
        Ok(Self { servers: out, timeout: Duration::from_secs(approvals.timeout_secs) })
    }

    /// What `p` says about `tool` before a call's arguments are looked at.
    pub fn action(p: &PolicyConfig, tool: &rmcp::model::Tool) -> Action {
        if let Some(a) = p.tools.iter().filter(|(g, _)| matches(g, &tool.name)).map(|(_, a)| *a).max() {
            return a;
        }
        if let Some(a) = p.default {
            return a;
        }
        let hint =
            |f: fn(&rmcp::model::ToolAnnotations) -> Option<bool>| tool.annotations.as_ref().and_then(f);
        if hint(|a| a.read_only_hint) == Some(true) {
            return Action::Allow;
        }
        if p.trusted && hint(|a| a.destructive_hint) == Some(false) {
            return Action::Allow;
        }
        Action::Ask
    }
}

impl ToolPolicy for Policies {
    /// Named by `policy.idempotent`, or marked `idempotentHint` on a
    /// trusted server.
    fn idempotent(&self, server: &str, tool: &rmcp::model::Tool) -> bool {
        let Some((p, _)) = self.servers.get(server) else { return false };
        p.idempotent.iter().any(|g| matches(g, &tool.name))
            || (p.trusted && tool.annotations.as_ref().and_then(|a| a.idempotent_hint) == Some(true))
    }

    fn decide(&self, server: &str, tool: &rmcp::model::Tool, _args: &Value) -> Decision {
        let default = (PolicyConfig::default(), None);
        let (p, _) = self.servers.get(server).unwrap_or(&default);
        match Self::action(p, tool) {
            Action::Allow => Decision::Allow,
            Action::Deny => Decision::Deny(format!("the policy of MCP server {server} denies {}", tool.name)),
            Action::Ask => Decision::Ask(self.ask(server, tool)),
        }
    }

    /// `policy.on_interrupt`, else: retry an idempotent tool, report a
    /// call that needed an approval (it is not silently re-run), fail the rest.
    fn on_interrupt(&self, server: &str, tool: &rmcp::model::Tool) -> OnUncertain {
        let default = (PolicyConfig::default(), None);
        let (p, _) = self.servers.get(server).unwrap_or(&default);
        let chosen = p.on_interrupt.unwrap_or_else(|| match Self::action(p, tool) {
            _ if self.idempotent(server, tool) => OnInterrupt::Retry,
            Action::Ask => OnInterrupt::Report,
            Action::Allow | Action::Deny => OnInterrupt::Fail,
        });
        match chosen {
            OnInterrupt::Retry => OnUncertain::Retry,
            OnInterrupt::Fail => OnUncertain::Fail,
            OnInterrupt::Report => OnUncertain::Report,
            OnInterrupt::Ask => {
                let ask = self.ask(server, tool);
                OnUncertain::Ask(UncertainGate {
                    server: Some(server.to_owned()),
                    channel: ask.channel,
                    answerers: ask.answerers,
                    timeout: ask.timeout,
                })
            }
        }
    }
}

impl Policies {
    /// Whom the server's policy asks, and how long it waits.
    fn ask(&self, server: &str, tool: &rmcp::model::Tool) -> Ask {
        let human = self.servers.get(server).and_then(|(_, h)| h.as_ref());
        Ask {
            channel: human.and_then(|h| h.channel.clone()),
            answerers: human
                .filter(|h| h.principal != OPERATORS)
                .map(|h| vec![h.principal.clone()])
                .unwrap_or_default(),
            timeout: self.timeout,
            idempotent: self.idempotent(server, tool),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{Tool, ToolAnnotations};
    use serde_json::json;
    use std::sync::Arc;

    fn tool(name: &str, read_only: Option<bool>, destructive: Option<bool>) -> Tool {
        let mut ann = ToolAnnotations::default();
        ann.read_only_hint = read_only;
        ann.destructive_hint = destructive;
        Tool::new(name.to_owned(), "", Arc::new(serde_json::Map::new())).with_annotations(ann)
    }

    #[test]
    fn rules_then_default_then_hints_and_the_most_restrictive_rule_wins() {
        let p = PolicyConfig {
            tools: BTreeMap::from([("delete_*".into(), Action::Deny), ("*".into(), Action::Allow)]),
            ..PolicyConfig::default()
        };
        assert_eq!(Policies::action(&p, &tool("delete_all", Some(true), None)), Action::Deny);
        assert_eq!(Policies::action(&p, &tool("write", None, None)), Action::Allow);
        let p = PolicyConfig { default: Some(Action::Deny), ..PolicyConfig::default() };
        assert_eq!(Policies::action(&p, &tool("read", Some(true), None)), Action::Deny);
    }

    #[test]
    fn untrusted_servers_ask_for_all_but_read_only_tools_and_trusted_ones_believe_destructive_hints() {
        let untrusted = PolicyConfig::default();
        assert_eq!(Policies::action(&untrusted, &tool("read", Some(true), None)), Action::Allow);
        assert_eq!(Policies::action(&untrusted, &tool("add", Some(false), Some(false))), Action::Ask);
        assert_eq!(Policies::action(&untrusted, &tool("rm", None, None)), Action::Ask);
        let trusted = PolicyConfig { trusted: true, ..PolicyConfig::default() };
        assert_eq!(Policies::action(&trusted, &tool("add", Some(false), Some(false))), Action::Allow);
        assert_eq!(Policies::action(&trusted, &tool("rm", None, Some(true))), Action::Ask);
        assert_eq!(Policies::action(&trusted, &tool("rm", None, None)), Action::Ask);
    }

    #[test]
    fn idempotent_calls_are_named_by_the_policy_or_hinted_by_a_trusted_server() {
        let mut hinted = tool("get", None, None);
        hinted.annotations.as_mut().expect("annotations").idempotent_hint = Some(true);
        let servers = [
            ("named".to_owned(), PolicyConfig { idempotent: vec!["get*".into()], ..Default::default() }),
            ("trusted".to_owned(), PolicyConfig { trusted: true, ..Default::default() }),
            ("untrusted".to_owned(), PolicyConfig::default()),
        ];
        let p = Policies::new(&servers, &ApprovalsConfig::default(), |_| None).unwrap();
        assert!(
            p.idempotent("named", &tool("get", None, None))
                && !p.idempotent("named", &tool("put", None, None))
        );
        assert!(p.idempotent("trusted", &hinted) && !p.idempotent("untrusted", &hinted));
    }

    #[test]
    fn a_cut_call_is_retried_when_idempotent_reported_when_it_needed_an_approval_else_fails_unless_chosen() {
        let humans =
            |_: &str| Some(Human { principal: "user:carol".into(), channel: Some("@channel/ops".into()) });
        let servers = [
            ("plain".to_owned(), PolicyConfig { idempotent: vec!["get".into()], ..Default::default() }),
            (
                "chosen".to_owned(),
                PolicyConfig {
                    on_interrupt: Some(OnInterrupt::Ask),
                    human: Some("@human/oncall".into()),
                    ..Default::default()
                },
            ),
        ];
        let p = Policies::new(&servers, &ApprovalsConfig::default(), humans).unwrap();
        assert_eq!(p.on_interrupt("plain", &tool("get", None, None)), OnUncertain::Retry);
        assert_eq!(p.on_interrupt("plain", &tool("rm", None, None)), OnUncertain::Report, "it asks");
        assert_eq!(p.on_interrupt("plain", &tool("read", Some(true), None)), OnUncertain::Fail, "allowed");
        let OnUncertain::Ask(gate) = p.on_interrupt("chosen", &tool("read", Some(true), None)) else {
            panic!("the operator chose ask")
        };
        assert_eq!(gate.channel.as_deref(), Some("@channel/ops"));
        assert_eq!(gate.answerers, ["user:carol"]);
        assert_eq!(gate.server.as_deref(), Some("chosen"));
        let bad = serde_yaml_ng::from_str::<PolicyConfig>("on_interrupt: later");
        assert!(bad.is_err(), "an unknown policy is refused");
    }

    #[test]
    fn an_ask_goes_to_the_named_human_and_an_undeclared_one_is_refused() {
        let humans = |n: &str| {
            (n == "oncall")
                .then(|| Human { principal: "user:carol".into(), channel: Some("@channel/ops".into()) })
        };
        let servers = [(
            "files".to_owned(),
            PolicyConfig { human: Some("@human/oncall".into()), ..Default::default() },
        )];
        let p = Policies::new(&servers, &ApprovalsConfig::default(), humans).unwrap();
        let Decision::Ask(ask) = p.decide("files", &tool("rm", None, None), &json!({})) else {
            panic!("asks")
        };
        assert_eq!(ask.channel.as_deref(), Some("@channel/ops"));
        assert_eq!(ask.answerers, ["user:carol"]);
        assert_eq!(ask.timeout, Duration::from_secs(3600));
        assert!(!ask.idempotent);
        let servers = [(
            "files".to_owned(),
            PolicyConfig { human: Some("@human/nobody".into()), ..Default::default() },
        )];
        let e = Policies::new(&servers, &ApprovalsConfig::default(), humans).err().unwrap();
        assert!(e.contains("@human/nobody") && e.contains("files"), "{e}");
    }
}
