//! The step graph: structural checks at load, and which steps may run now.

use crate::def::{Step, StepKind};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Where a step of a run stands (durable: part of the run's checkpoint).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Pending,
    /// Started; its effect may or may not have happened.
    Running,
    /// Waiting for a human's answer.
    Waiting,
    Done,
    Skipped,
    Failed,
}

impl StepStatus {
    /// Done or skipped: dependents may go on.
    pub fn settled(self) -> bool {
        matches!(self, StepStatus::Done | StepStatus::Skipped)
    }
}

/// Structural problems as `(field, message)`.
pub(crate) fn check(steps: &BTreeMap<String, Step>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for s in steps.values() {
        for (i, d) in s.depends_on.iter().enumerate() {
            if d == &s.id {
                out.push((format!("steps.{}.depends_on", s.id), "a step cannot depend on itself".into()));
            } else if !steps.contains_key(d) {
                out.push((
                    format!("steps.{}.depends_on[{i}]", s.id),
                    format!("{d:?} is not a step of this workflow"),
                ));
            }
        }
        let named: Vec<(&str, &String)> = match &s.kind {
            StepKind::Switch { cases, default } => cases
                .iter()
                .flat_map(|c| c.steps.iter().map(|x| ("cases", x)))
                .chain(default.iter().map(|x| ("default", x)))
                .collect(),
            StepKind::Parallel { branches } => branches.iter().map(|x| ("branches", x)).collect(),
            _ => Vec::new(),
        };
        for (field, id) in named {
            if !steps.contains_key(id) {
                out.push((
                    format!("steps.{}.{field}", s.id),
                    format!("{id:?} is not a step of this workflow"),
                ));
            }
        }
    }
    if !steps.values().any(|s| matches!(s.kind, StepKind::Finish { .. })) {
        out.push(("steps".into(), "a workflow needs a step of kind finish".into()));
    }
    if out.is_empty()
        && let Some(cycle) = find_cycle(steps)
    {
        out.push((
            format!("steps.{}.depends_on", cycle[0]),
            format!("the steps form a cycle: {}", cycle.join(" → ")),
        ));
    }
    out
}

/// A cycle as the list of step ids around it (first repeated at the end).
fn find_cycle(steps: &BTreeMap<String, Step>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Closed,
    }
    let mut mark: BTreeMap<&str, Mark> = steps.keys().map(|k| (k.as_str(), Mark::New)).collect();
    for start in steps.keys() {
        if mark[start.as_str()] != Mark::New {
            continue;
        }
        // Iterative depth-first search: (step, index of the next dependency).
        let mut stack: Vec<(&str, usize)> = vec![(start, 0)];
        mark.insert(start, Mark::Open);
        while let Some((id, next)) = stack.last().copied() {
            let deps = &steps[id].depends_on;
            if next == deps.len() {
                mark.insert(id, Mark::Closed);
                stack.pop();
                continue;
            }
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            let d = deps[next].as_str();
            match mark.get(d).copied() {
                Some(Mark::New) => {
                    mark.insert(d, Mark::Open);
                    stack.push((d, 0));
                }
                Some(Mark::Open) => {
                    let from = stack.iter().position(|(s, _)| *s == d).unwrap_or(0);
                    let mut cycle: Vec<String> = stack[from..].iter().map(|(s, _)| (*s).to_owned()).collect();
                    cycle.push(d.to_owned());
                    return Some(cycle);
                }
                _ => {}
            }
        }
    }
    None
}

/// Pending steps whose dependencies are all settled, in id order.
pub fn ready_steps(steps: &BTreeMap<String, Step>, status: &BTreeMap<String, StepStatus>) -> Vec<String> {
    let of = |id: &str| status.get(id).copied().unwrap_or(StepStatus::Pending);
    let mut ready = BTreeSet::new();
    for s in steps.values() {
        if of(&s.id) == StepStatus::Pending && s.depends_on.iter().all(|d| of(d).settled()) {
            ready.insert(s.id.clone());
        }
    }
    ready.into_iter().collect()
}
