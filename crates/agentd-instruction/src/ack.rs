//! Acknowledgement lines: what the model sees in place of a machinery block.

use crate::model::{Block, Form};

/// The acknowledgement for one machinery block, or `None` if it delivers nothing
/// (the model sees no machinery internals).
pub(crate) fn line(b: &Block) -> Option<String> {
    if b.form == Form::Set {
        return set_line(b);
    }
    let name = b.name.as_deref().unwrap_or("");
    let attr = |k: &str| b.attrs.str(k).unwrap_or("").to_string();
    Some(match b.kind.as_str() {
        "workflow" => format!("[workflow \"{name}\" is loaded and runs autonomously]"),
        "skill" => format!("[skill \"{name}\" is available — reference it as @skill/{name}]"),
        "mcp" => format!("[mcp server \"{name}\" is connected; its tools are available]"),
        "config" => "[runtime configuration is applied]".to_string(),
        "tools" => "[tool policy is applied]".to_string(),
        "stream" => format!("[event stream \"{name}\" is declared]"),
        "file" => format!("[file \"{name}\" is present at {}]", attr("path")),
        "data" => format!("[data \"{name}\" is available]"),
        "media" => format!("[media \"{name}\" is available]"),
        "asset" => format!("[asset \"{name}\" is available]"),
        "knowledge" => format!("[knowledge base \"{name}\" is available]"),
        "endpoint" => format!("[endpoint \"{name}\" listens at {}]", attr("path")),
        "channel" => match b.attrs.str("target") {
            Some(t) => format!("[channel \"{name}\" is available for {t}]"),
            None => format!("[channel \"{name}\" is available]"),
        },
        "human" => format!("[human role \"{name}\" may be asked]"),
        "function" => format!("[tool \"{name}\" is available]"),
        "agent" => format!("[subagent \"{name}\" is available]"),
        _ => return None,
    })
}

/// One line for a whole set: `[2 human roles are declared: a, b]`.
fn set_line(b: &Block) -> Option<String> {
    let (one, many) = match b.kind.as_str() {
        "human" => ("human role", "human roles"),
        "channel" => ("channel", "channels"),
        "stream" => ("event stream", "event streams"),
        "agent" => ("subagent", "subagents"),
        "skill" => ("skill", "skills"),
        _ => return None,
    };
    let names: Vec<&str> = b.members.iter().filter_map(|m| m.name.as_deref()).collect();
    let n = names.len();
    let (noun, verb) = if n == 1 { (one, "is") } else { (many, "are") };
    Some(format!("[{n} {noun} {verb} declared: {}]", names.join(", ")))
}
