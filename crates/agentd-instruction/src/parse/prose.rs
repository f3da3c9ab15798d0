//! Keyword (`MUST: …`) and alert (`> [!TIP]`) blocks in Markdown regions.

use super::{Parser, Region};
use crate::lex;
use crate::model::{Block, Body, Form, Node};
use crate::registry::{BodyType, Disposition};

impl<'a> Parser<'a> {
    pub(super) fn keyword(
        &mut self,
        i: usize,
        end: usize,
        word: &'static str,
        text: usize,
        r: &mut Region,
    ) -> usize {
        let mut j = i + 1;
        while j < end && !ends_keyword(self.line(j)) {
            j += 1;
        }
        let first = self.line(i);
        let mut body = vec![first.get(text..).unwrap_or("")];
        body.extend((i + 1..j).map(|k| self.line(k)));
        let kind = keyword_kind(word);
        let mut b = Block::new(kind, false, Disposition::Prose, Form::Keyword, i + 1);
        b.keyword = Some(word);
        b.body = Some(Body::text(BodyType::Markdown, body.join("\n"), i + 1));
        b.nodes = (i..j).map(Node::Line).collect();
        b.end = j;
        r.push_block(b);
        j
    }

    pub(super) fn alert(&mut self, i: usize, end: usize, word: &'static str, r: &mut Region) -> usize {
        let mut j = i + 1;
        while j < end && self.line(j).starts_with('>') {
            j += 1;
        }
        let body: Vec<&str> = (i + 1..j).map(|k| lex::unquote(self.line(k))).collect();
        let mut b = Block::new(keyword_kind(word), false, Disposition::Prose, Form::Alert, i + 1);
        b.keyword = Some(word);
        b.body = Some(Body::text(BodyType::Markdown, body.join("\n"), i + 2));
        b.nodes = (i + 1..j).map(Node::Line).collect();
        b.end = j;
        r.push_block(b);
        j
    }
}

/// Whether `line` ends the paragraph of a keyword block.
fn ends_keyword(line: &str) -> bool {
    lex::is_blank(line)
        || lex::keyword(line).is_some()
        || lex::open_fence(line).is_some()
        || lex::leaf(line).is_some()
        || lex::close_fence(line).is_some()
        || lex::heading_level(line).is_some()
        || lex::code_open(line).is_some()
        || lex::list_marker(line).is_some()
        || line.starts_with('>')
}

fn keyword_kind(word: &str) -> &'static str {
    crate::registry::KEYWORDS.iter().find(|(w, _)| *w == word).map(|(_, k)| *k).unwrap_or("note")
}
