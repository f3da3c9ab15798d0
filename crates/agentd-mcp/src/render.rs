//! A tool result as the text the model gets: text content as it is,
//! structured content as JSON when no text says it,
//! resources with their URI and text, and a line for media the model cannot
//! read here. Bounded: a result longer than `MAX_RESULT_BYTES` is cut, saying so.

use rmcp::model::CallToolResult;
use serde_json::Value;

/// The most a tool result gives the model (and its event carries).
pub const MAX_RESULT_BYTES: usize = 64 * 1024;

/// The text of a result and whether the server marked it an error.
pub fn render(result: &CallToolResult) -> (String, bool) {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        let v = serde_json::to_value(block).unwrap_or(Value::Null);
        parts.push(render_block(&v));
    }
    // A server that returns structured content should also say it as text
    // (the specification's backwards compatibility); only without any text
    // does the model get the structured content itself.
    let has_text = result.content.iter().any(|b| matches!(b, rmcp::model::ContentBlock::Text(_)));
    if let (Some(structured), false) = (&result.structured_content, has_text) {
        parts.push(structured.to_string());
    }
    let text = if parts.is_empty() { "(the tool returned no content)".to_owned() } else { parts.join("\n") };
    (cut(text), result.is_error == Some(true))
}

fn render_block(v: &Value) -> String {
    let s = |k: &str| v[k].as_str().unwrap_or_default();
    match s("type") {
        "text" => s("text").to_owned(),
        "image" | "audio" => format!(
            "[{} content, {}, {} base64 characters, not shown]",
            s("type"),
            s("mimeType"),
            s("data").len()
        ),
        "resource" => {
            let r = &v["resource"];
            let uri = r["uri"].as_str().unwrap_or_default();
            match r["text"].as_str() {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!(
                    "[resource {uri}, {}, {} base64 characters, not shown]",
                    r["mimeType"].as_str().unwrap_or("binary"),
                    r["blob"].as_str().map_or(0, str::len)
                ),
            }
        }
        "resource_link" => format!("[resource link {} ({})]", s("uri"), s("name")),
        other => format!("[{other} content, not shown]"),
    }
}

/// Cuts `text` to `MAX_RESULT_BYTES` at a character boundary.
pub fn cut(mut text: String) -> String {
    if text.len() <= MAX_RESULT_BYTES {
        return text;
    }
    let total = text.len();
    let mut at = MAX_RESULT_BYTES;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    text.push_str(&format!("\n[cut: the result was {total} bytes, the first {at} are shown]"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(v: Value) -> CallToolResult {
        serde_json::from_value(v).expect("a CallToolResult")
    }

    #[test]
    fn text_structured_resources_and_errors() {
        let r = result(json!({"content": [{"type": "text", "text": "hello"}], "isError": false}));
        assert_eq!(render(&r), ("hello".to_owned(), false));
        // Structured content the text already says is not repeated.
        let r =
            result(json!({"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3}}));
        assert_eq!(render(&r).0, "3");
        let r = result(json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(render(&r).0, "{\"sum\":3}");
        let r =
            result(json!({"content": [{"type": "resource", "resource": {"uri": "file:///a", "text": "A"}}]}));
        assert_eq!(render(&r).0, "[resource file:///a]\nA");
        let r = result(json!({"content": [{"type": "text", "text": "bad"}], "isError": true}));
        assert_eq!(render(&r), ("bad".to_owned(), true));
    }

    #[test]
    fn long_results_are_cut_saying_so() {
        let out = cut("é".repeat(MAX_RESULT_BYTES));
        assert!(out.len() < MAX_RESULT_BYTES + 100);
        assert!(out.ends_with("are shown]"), "{}", &out[out.len() - 80..]);
    }
}
