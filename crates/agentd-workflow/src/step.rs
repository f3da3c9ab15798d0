//! One step of a definition: its common keys and those of its kind.

use crate::def::*;
use crate::fields::*;
use crate::guard::Guard;
use serde_json::{Map, Value};

const COMMON_KEYS: &[&str] = &["kind", "depends_on", "when", "timeout", "retry", "on_error", "description"];
const KINDS: &[&str] =
    &["agent", "subagent", "human", "a2a.delegate", "assign", "switch", "parallel", "finish"];

fn retry(errs: &mut Errors, field: &str, v: Option<&Value>) -> Retry {
    match v {
        None => Retry::default(),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(max) if max <= 100 => Retry { max: max as u32, ..Retry::default() },
            _ => {
                errs.add(field, "must be an attempt count from 0 to 100");
                Retry::default()
            }
        },
        Some(Value::Object(m)) => {
            unknown_keys(errs, field, m, &["max", "backoff"]);
            let max = match m.get("max").and_then(Value::as_u64) {
                Some(n) if n <= 100 => n as u32,
                _ => {
                    errs.add(join(field, "max"), "must be an attempt count from 0 to 100");
                    0
                }
            };
            let backoff = duration(errs, &join(field, "backoff"), m.get("backoff")).unwrap_or_default();
            Retry { max, backoff }
        }
        Some(_) => {
            errs.add(field, "must be a count or {max, backoff}");
            Retry::default()
        }
    }
}

pub(crate) fn step(errs: &mut Errors, id: &str, v: &Value) -> Option<Step> {
    let at = format!("steps.{id}");
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        errs.add(&at, "a step id is letters, digits, `_` and `-`");
    }
    let Value::Object(m) = v else {
        errs.add(&at, "must be a mapping with `kind:`");
        return None;
    };
    let kind_name = req_str(errs, &join(&at, "kind"), m.get("kind"));
    if kind_name.is_empty() {
        return None;
    }
    if !KINDS.contains(&kind_name.as_str()) {
        errs.add(
            join(&at, "kind"),
            format!("{kind_name:?} is not a step kind (kinds: {})", KINDS.join(", ")),
        );
        return None;
    }
    let f = |k: &str| join(&at, k);
    let extra: &[&str] = match kind_name.as_str() {
        "agent" => &["prompt", "instruction", "tools"],
        "subagent" => &["instruction", "input", "name", "tools"],
        "human" => &["question", "schema", "to", "fallback", "escalate_after"],
        "a2a.delegate" => &["peer", "message"],
        "assign" => &["values"],
        "switch" => &["cases", "default"],
        "parallel" => &["branches"],
        _ => &["output", "status", "reason"],
    };
    let known: Vec<&str> = COMMON_KEYS.iter().chain(extra).copied().collect();
    unknown_keys(errs, &at, m, &known);
    let kind = match kind_name.as_str() {
        // `instruction` is the reference dialect's name for the prompt.
        "agent" => match (m.get("prompt"), m.get("instruction")) {
            (Some(_), Some(_)) => {
                errs.add(f("instruction"), "give `prompt` or `instruction`, not both");
                StepKind::Agent { prompt: Value::Null, tools: None }
            }
            (p, i) => StepKind::Agent {
                prompt: req_value(errs, &f("prompt"), p.or(i)),
                tools: opt_strs(errs, &f("tools"), m.get("tools")),
            },
        },
        "subagent" => StepKind::Subagent {
            instruction: req_value(errs, &f("instruction"), m.get("instruction")),
            input: req_value(errs, &f("input"), m.get("input")),
            name: opt_str(errs, &f("name"), m.get("name")),
            tools: opt_strs(errs, &f("tools"), m.get("tools")),
        },
        "human" => {
            let to = req_str(errs, &f("to"), m.get("to"));
            let to = match to.strip_prefix("@human/") {
                Some(n) if !n.is_empty() => n.to_owned(),
                _ if to.is_empty() => String::new(),
                _ => {
                    errs.add(f("to"), format!("{to:?} must address a person as @human/<name>"));
                    String::new()
                }
            };
            let fallback = match opt_str(errs, &f("fallback"), m.get("fallback")).as_deref() {
                None | Some("fail") => Fallback::Fail,
                Some("wait") => Fallback::Wait,
                Some(other) => {
                    errs.add(f("fallback"), format!("{other:?} is not a fallback (fail, wait)"));
                    Fallback::Fail
                }
            };
            StepKind::Human {
                question: req_value(errs, &f("question"), m.get("question")),
                schema: json_schema(errs, &f("schema"), m.get("schema")),
                to,
                fallback,
                escalate_after: duration(errs, &f("escalate_after"), m.get("escalate_after")),
            }
        }
        "a2a.delegate" => StepKind::Delegate {
            peer: req_str(errs, &f("peer"), m.get("peer")),
            message: req_value(errs, &f("message"), m.get("message")),
        },
        "assign" => StepKind::Assign { values: req_value(errs, &f("values"), m.get("values")) },
        "switch" => switch(errs, &at, m),
        "parallel" => {
            let branches = ids(errs, &f("branches"), m.get("branches"));
            if branches.is_empty() {
                errs.add(f("branches"), "must list at least one step id");
            }
            StepKind::Parallel { branches }
        }
        _ => {
            let status = match opt_str(errs, &f("status"), m.get("status")).as_deref() {
                None | Some("completed") => FinishStatus::Completed,
                Some("failed") => FinishStatus::Failed,
                Some(other) => {
                    errs.add(f("status"), format!("{other:?} is not a finish status (completed, failed)"));
                    FinishStatus::Completed
                }
            };
            StepKind::Finish {
                status,
                output: m.get("output").cloned().unwrap_or(Value::Null),
                reason: m.get("reason").cloned(),
            }
        }
    };
    let when = opt_str(errs, &f("when"), m.get("when"));
    if let Some(w) = &when
        && let Err(e) = Guard::compile(w)
    {
        errs.add(f("when"), e);
    }
    let on_error = match opt_str(errs, &f("on_error"), m.get("on_error")).as_deref() {
        None | Some("fail") => ErrorPolicy::Fail,
        Some("continue") => ErrorPolicy::Continue,
        Some(other) => {
            errs.add(f("on_error"), format!("{other:?} is not an error policy (fail, continue)"));
            ErrorPolicy::Fail
        }
    };
    Some(Step {
        id: id.to_owned(),
        depends_on: ids(errs, &f("depends_on"), m.get("depends_on")),
        when,
        timeout: duration(errs, &f("timeout"), m.get("timeout")),
        retry: retry(errs, &f("retry"), m.get("retry")),
        on_error,
        kind,
    })
}

fn switch(errs: &mut Errors, at: &str, m: &Map<String, Value>) -> StepKind {
    let field = join(at, "cases");
    let mut cases = Vec::new();
    match m.get("cases") {
        Some(Value::Array(list)) if !list.is_empty() => {
            for (i, c) in list.iter().enumerate() {
                let cf = format!("{field}[{i}]");
                let Value::Object(cm) = c else {
                    errs.add(&cf, "must be a mapping {when, steps}");
                    continue;
                };
                unknown_keys(errs, &cf, cm, &["when", "steps"]);
                let when = req_str(errs, &join(&cf, "when"), cm.get("when"));
                if !when.is_empty()
                    && let Err(e) = Guard::compile(&when)
                {
                    errs.add(join(&cf, "when"), e);
                }
                cases.push(Case { when, steps: ids(errs, &join(&cf, "steps"), cm.get("steps")) });
            }
        }
        Some(_) => errs.add(&field, "must be a non-empty list of {when, steps}"),
        None => errs.add(&field, "is required"),
    }
    StepKind::Switch { cases, default: ids(errs, &join(at, "default"), m.get("default")) }
}
