//! Sections: `## !kind name {attrs}` headings whose body runs to the next heading of the same or
//! higher level, any sigiled heading, or (for YAML and code bodies) the next fence.

use super::{Ctx, Parser, Region};
use crate::body;
use crate::classify::{self, Class};
use crate::lex::{self, CodeState, Fence};
use crate::model::{AttrValue, Body, Form, Node};
use crate::registry::BodyType;

impl<'a> Parser<'a> {
    pub(super) fn section(
        &mut self,
        i: usize,
        end: usize,
        sec: Result<lex::Section<'a>, ()>,
        ctx: Ctx,
        r: &mut Region,
    ) -> usize {
        let Ok(sec) = sec else {
            self.refuse(
                i + 1,
                "malformed-section",
                "malformed section heading — write ## !kind name {attrs}",
            );
            r.nodes.push(Node::Line(i));
            return i + 1;
        };
        let kind = sec.kind.to_ascii_lowercase();
        let yaml_like = classify::body_of(&kind).is_some_and(|b| b != BodyType::Markdown);
        let stop = self.section_end(i, end, sec.level, yaml_like);
        if !ctx.top {
            self.refuse(
                i + 1,
                "misplaced-section",
                "a ## !kind section can only stand at the top level of a document",
            );
            return stop;
        }
        let Class::Known(spec) = classify::classify(self, i + 1, &kind, true, Form::Section, ctx) else {
            return stop;
        };
        let mut attrs = self.attrs(sec.attrs, spec, i + 1);
        if attrs.get("name").is_some() {
            self.refuse(
                i + 1,
                "repeated-attribute",
                "a section's name is in its heading — drop name= from its attributes",
            );
        }
        attrs.set("name", AttrValue::Str(sec.name.to_string()));
        let mut b = self.new_block(spec, true, Form::Section, i, attrs);
        b.end = stop;
        let lines = self.numbered(i + 1, stop);
        match spec.body {
            BodyType::Markdown => {
                let inner = self.region(i + 1, stop, ctx.inner(spec.name, true));
                b.body = Some(Body::text(BodyType::Markdown, self.text_of(&inner.nodes), i + 2));
                b.nodes = inner.nodes;
                b.children = inner.blocks;
            }
            ty => {
                let blocks = body::code_blocks(&lines);
                let yaml = ty == BodyType::Yaml;
                let ok_lang = |info: &str| !yaml || matches!(info, "" | "yaml" | "yml");
                match blocks.as_slice() {
                    [(first, info, content)] if ok_lang(info) => {
                        let mut bd = Body::text(ty, content.join("\n"), *first);
                        if !yaml && !info.is_empty() {
                            bd.lang = Some(info.clone());
                        }
                        b.body = Some(bd);
                        let prose: Vec<&str> = body::outside_code(&lines).iter().map(|l| l.1).collect();
                        let desc = prose.join("\n").trim_matches('\n').trim().to_string();
                        if !desc.is_empty() && b.attrs.get("description").is_none() {
                            b.attrs.set("description", AttrValue::Str(desc));
                        }
                    }
                    _ => {
                        let what = if yaml { "yaml" } else { "code" };
                        self.refuse(
                            i + 1,
                            "section-without-fence",
                            format!("a {} section must contain exactly one fenced {what} block", spec.name),
                        );
                        return stop;
                    }
                }
            }
        }
        r.push_block(b);
        stop
    }

    /// Where a section opened at `i` ends (exclusive).
    fn section_end(&self, i: usize, end: usize, level: usize, yaml_like: bool) -> usize {
        let mut code = CodeState::default();
        let mut j = i + 1;
        while j < end {
            let l = self.line(j);
            if code.feed(l) {
                j += 1;
                continue;
            }
            if let Some(lv) = lex::heading_level(l)
                && (lv <= level || lex::section(l).is_some())
            {
                break;
            }
            let sigiled = |f: Option<Result<Fence<'_>, ()>>| matches!(f, Some(Ok(f)) if f.sigil);
            let opens = if yaml_like {
                lex::open_fence(l).is_some() || lex::leaf(l).is_some()
            } else {
                sigiled(lex::open_fence(l)) || sigiled(lex::leaf(l))
            };
            if opens {
                break;
            }
            j += 1;
        }
        j
    }
}
