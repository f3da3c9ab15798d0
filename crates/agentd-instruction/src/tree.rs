//! The block tree as JSON, in the shape of the upstream conformance corpus's `tree.json`.

use crate::model::{AttrValue, Attrs, Block, Body, Document, Form};
use crate::registry::BodyType;
use serde_json::{Map, Value, json};

/// `{ "spec", "frontMatter"?, "blocks" }`.
pub fn tree_json(doc: &Document) -> Value {
    let mut top = Map::new();
    top.insert("spec".into(), Value::String(doc.spec.clone()));
    if let Some(fm) = &doc.front_matter {
        top.insert("frontMatter".into(), Value::Object(fm.map.clone()));
    }
    top.insert("blocks".into(), Value::Array(doc.blocks.iter().map(block).collect()));
    Value::Object(top)
}

fn attrs(a: &Attrs) -> Value {
    let mut m = Map::new();
    for (k, v) in a.iter() {
        let v = match v {
            AttrValue::Str(s) => Value::String(s.clone()),
            AttrValue::Bool(b) => Value::Bool(*b),
            AttrValue::List(l) => json!(l),
        };
        m.insert(k.to_string(), v);
    }
    Value::Object(m)
}

fn body(b: &Body) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String(b.kind.as_str().into()));
    match b.kind {
        BodyType::Table => {
            let rows = b
                .rows
                .iter()
                .map(|r| {
                    Value::Object(r.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect())
                })
                .collect();
            m.insert("rows".into(), Value::Array(rows));
        }
        BodyType::Deflist => {
            let entries = b
                .entries
                .iter()
                .map(|e| {
                    let mut o = Map::new();
                    o.insert("term".into(), Value::String(e.term.clone()));
                    if !e.attrs.is_empty() {
                        o.insert("attrs".into(), attrs(&e.attrs));
                    }
                    o.insert("definition".into(), Value::String(e.definition.clone()));
                    Value::Object(o)
                })
                .collect();
            m.insert("entries".into(), Value::Array(entries));
        }
        _ => {
            m.insert("text".into(), Value::String(b.text.clone()));
            if let Some(lang) = &b.lang {
                m.insert("lang".into(), Value::String(lang.clone()));
            }
        }
    }
    Value::Object(m)
}

/// One block: kind, sigil, form, line, attrs, then children, members and body when present.
pub(crate) fn block(b: &Block) -> Value {
    let mut m = Map::new();
    m.insert("kind".into(), Value::String(b.kind.clone()));
    m.insert("sigil".into(), Value::Bool(b.sigil));
    m.insert("form".into(), Value::String(b.form.as_str().into()));
    m.insert("line".into(), json!(b.line));
    m.insert("attrs".into(), attrs(&b.attrs));
    if !b.children.is_empty() {
        m.insert("children".into(), Value::Array(b.children.iter().map(block).collect()));
    }
    if b.form == Form::Set {
        m.insert("members".into(), Value::Array(b.members.iter().map(block).collect()));
    }
    if let Some(bd) = &b.body {
        m.insert("body".into(), body(bd));
    }
    Value::Object(m)
}
