//! Sets: `:::!kind[]` bodies that are entirely a pipe table or a definition list, one member
//! per row or entry.

use super::{Parser, invalid_name};
use crate::attrs;
use crate::body;
use crate::lex;
use crate::model::{AttrValue, Attrs, Block, Form};
use crate::registry::KindSpec;

impl<'a> Parser<'a> {
    pub(super) fn set(
        &mut self,
        spec: &'static KindSpec,
        sigil: bool,
        i: usize,
        close: usize,
        attrs: Attrs,
    ) -> Option<Block> {
        let line = i + 1;
        let lines = self.numbered(i + 1, close);
        let mut set = Block::new(spec.name, sigil, spec.disposition, Form::Set, line);
        let member = |attrs: Attrs| {
            let mut m = Block::new(spec.name, sigil, spec.disposition, Form::Member, line);
            m.name = attrs.str("name").map(str::to_string);
            m.attrs = attrs;
            m
        };
        if let Ok(t) = body::table(&lines) {
            let headers: Vec<String> = t.headers.iter().map(|h| h.to_ascii_lowercase()).collect();
            let mut bad = false;
            for h in &headers {
                if spec.attr_type(h).is_none() {
                    self.refuse(line, "unknown-column", attrs::unknown(h, spec));
                    bad = true;
                }
            }
            if bad {
                return None;
            }
            for (n, (_, cells)) in t.rows.into_iter().enumerate() {
                let mut a = attrs.clone();
                for (h, cell) in headers.iter().zip(cells) {
                    if cell.is_empty() {
                        continue;
                    }
                    let ty = spec.attr_type(h).unwrap_or(crate::registry::AttrType::Str);
                    match crate::params::typed(ty, Some(&cell)) {
                        Ok(v) => a.set(h, v),
                        Err(()) => self.refuse(
                            line,
                            "invalid-attribute",
                            format!("row {}: \"{h}\" must be true or false", n + 1),
                        ),
                    }
                }
                self.member_name(spec, &a, n + 1, line);
                set.members.push(member(a));
            }
        } else if let Ok(entries) = body::deflist(&lines, true) {
            for (n, (entry, term_attrs)) in entries.into_iter().enumerate() {
                let mut a = attrs.clone();
                if let Some(text) = term_attrs {
                    for (k, v) in self.attrs(Some(&text), spec, entry.line).0 {
                        a.set(&k, v);
                    }
                }
                a.set("name", AttrValue::Str(entry.term.clone()));
                if spec.attr_type("description").is_some() {
                    a.set("description", AttrValue::Str(entry.definition.replace('\n', " ")));
                } else {
                    self.refuse(
                        entry.line,
                        "unknown-column",
                        format!(
                            "{}[] entry \"{}\": {} has no description — use a table",
                            spec.name, entry.term, spec.name
                        ),
                    );
                }
                self.member_name(spec, &a, n + 1, line);
                set.members.push(member(a));
            }
        } else {
            self.refuse(
                line,
                "set-body-mixed",
                format!("a set body must be a table or a definition list ({}[])", spec.name),
            );
            return None;
        }
        Some(set)
    }

    fn member_name(&mut self, spec: &KindSpec, a: &Attrs, row: usize, line: usize) {
        match a.str("name") {
            None if spec.identity => self.refuse(
                line,
                "set-row-without-name",
                format!("row {row} has no name — every member of {}[] needs one", spec.name),
            ),
            Some(name) if !lex::is_name(name) => self.refuse(line, "invalid-name", invalid_name(name)),
            _ => {}
        }
    }
}
