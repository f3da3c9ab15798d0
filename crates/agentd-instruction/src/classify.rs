//! Name policy for a written block: sigil rules, the reserved-bare guard, sub-block placement,
//! the forms a kind accepts, and the trust-ladder grant it needs.

use crate::model::Form;
use crate::parse::{Ctx, Parser};
use crate::registry::{self, BodyType, Disposition, Family, KindSpec};

/// The outcome for one written kind.
pub(crate) enum Class {
    /// A registered kind in an accepted form.
    Known(&'static KindSpec),
    /// An unknown bare kind: inert, its body is prose.
    Unknown,
    /// Refused (the refusal is recorded); the block's lines are skipped.
    Refused,
}

/// The body type of a registered kind.
pub(crate) fn body_of(kind: &str) -> Option<BodyType> {
    registry::kind(kind).map(|k| k.body)
}

fn article(parent: &str) -> &'static str {
    if parent == "mcp" { "an" } else { "a" }
}

/// How the block was written, for messages (`:::!runtime`, `::human`, `## !skill`).
fn written(kind: &str, sigil: bool, form: Form) -> String {
    let s = if sigil { "!" } else { "" };
    match form {
        Form::Leaf => format!("::{s}{kind}"),
        Form::Set => format!(":::{s}{kind}[]"),
        Form::Section => format!("## {s}{kind}"),
        _ => format!(":::{s}{kind}"),
    }
}

/// Classifies `kind` written with/without the sigil in `form` at 1-based `line`, recording
/// any refusal on the parser.
pub(crate) fn classify(
    p: &mut Parser<'_>,
    line: usize,
    kind: &str,
    sigil: bool,
    form: Form,
    ctx: Ctx,
) -> Class {
    let mut refuse = |code: &'static str, msg: String| {
        p.refusals.push(crate::model::Refusal::at(line, code, msg));
        Class::Refused
    };
    let Some(spec) = registry::kind(kind) else {
        if sigil {
            return refuse(
                "unknown-sigiled-kind",
                format!(
                    "unknown machinery kind \"{kind}\" — this reader implements version 1 (known: workflow, skill, config, …)"
                ),
            );
        }
        return Class::Unknown;
    };
    if let Some(parent) = spec.parent {
        if ctx.parent != Some(parent) {
            return refuse(
                "sub-block-out-of-place",
                format!("{kind} is valid only inside {} {parent}", article(parent)),
            );
        }
    } else {
        match (spec.disposition, sigil) {
            (Disposition::Machinery, false) => {
                return refuse(
                    "bare-machinery-kind",
                    format!("\"{kind}\" is a machinery kind — did you mean :::!{kind}"),
                );
            }
            (Disposition::Prose, true) => {
                return refuse(
                    "sigiled-prose-kind",
                    format!("\"{kind}\" is a prose kind — did you mean :::{kind}"),
                );
            }
            (Disposition::Structural, true) => {
                return refuse(
                    "sigiled-prose-kind",
                    format!("\"{kind}\" is a structural kind — did you mean :::{kind}"),
                );
            }
            _ => {}
        }
    }
    let s = if sigil { "!" } else { "" };
    match form {
        Form::Container if !spec.has(registry::C) => {
            return refuse("body-not-allowed", format!("{kind} takes no body — write ::{s}{kind}{{…}}"));
        }
        Form::Leaf if !spec.has(registry::L) => {
            let fix = if spec.has(registry::K) {
                format!("write \"{}: …\" or use :::{kind}", kind.to_ascii_uppercase())
            } else {
                format!("use :::{s}{kind}")
            };
            return refuse("body-required", format!("{kind} requires a body ({}) — {fix}", spec.what));
        }
        Form::Set if !spec.has(registry::S) => {
            if spec.body == BodyType::Deflist || kind == "form" {
                return refuse("redundant-set", format!("{kind} is already a list — write :::{kind}"));
            }
            return refuse(
                "set-not-allowed",
                format!("{kind} has no set form — write one :::{s}{kind} per entry"),
            );
        }
        Form::Section if !spec.has(registry::SEC) => {
            return refuse("section-not-allowed", format!("{kind} has no section form — use :::{s}{kind}"));
        }
        _ => {}
    }
    let family = spec.family;
    if family != Family::Default {
        if !p.opts.grants.contains(&family) {
            return refuse(
                "ungranted-family",
                format!(
                    "{} needs the \"{family}\" capability grant — add it to document_capabilities",
                    written(kind, sigil, form)
                ),
            );
        }
        if p.opts.over_the_wire && family.is_wire_floor() {
            return refuse(
                "wire-floor",
                format!(
                    "{} needs the \"{family}\" capability, which is never admissible in a document that arrived over the wire",
                    written(kind, sigil, form)
                ),
            );
        }
    }
    Class::Known(spec)
}
