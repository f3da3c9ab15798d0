//! No panics on any input: every fixture truncated at every line (and every few bytes), plus
//! seeded random mutations built from the grammar's own punctuation, through load, tree and
//! delivery.

use agentd_instruction::{Context, Included, Options, deliver_report, load_with, tree_json};
use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stack = vec![root.join("tests/conformance"), root.join("examples")];
    let mut out = Vec::new();
    while let Some(d) = stack.pop() {
        let mut entries: Vec<PathBuf> =
            fs::read_dir(&d).into_iter().flatten().flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "md")
                && let Ok(text) = fs::read_to_string(&p)
            {
                out.push((p.display().to_string(), text));
            }
        }
    }
    assert!(out.len() > 40, "expected the fixture documents, found {}", out.len());
    out
}

/// Runs the whole pipeline; returns a description of the panic, if any.
fn exercise(text: &str) -> Option<String> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        for opts in [Options::default(), Options::all_grants()] {
            if let Ok(doc) = load_with(text, &opts) {
                let _ = tree_json(&doc);
                let mut ctx = Context::default();
                ctx.params.insert("environment".into(), "production".into());
                ctx.includes.insert("ins_self".into(), Included::Source(text.to_string()));
                ctx.options = opts.clone();
                let d = deliver_report(&doc, &ctx);
                assert!(d.text.ends_with('\n'), "delivery must end with a newline");
                let _ = (doc.workflows(), doc.humans(), doc.channels(), doc.mcp_servers(), doc.config());
            }
        }
    }));
    result.err().map(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

#[test]
fn truncated_fixtures_never_panic() {
    let mut failures = Vec::new();
    for (path, text) in fixtures() {
        let mut cuts: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
        cuts.extend((0..text.len()).step_by(7));
        for cut in cuts {
            let mut cut = cut;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            if let Some(p) = exercise(&text[..cut]) {
                failures.push(format!("{path} cut at byte {cut}: {p}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} panics:\n{}", failures.len(), failures.join("\n"));
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const PIECES: &[&str] = &[
    ":::",
    "::::",
    "::",
    "!",
    "{",
    "}",
    "[]",
    "\"",
    "\\",
    "=",
    "|",
    "|---|",
    "```",
    "~~~",
    "\n",
    "\n\n",
    "MUST: ",
    "MUST NOT: ",
    "**SHOULD:** ",
    "- NEVER: ",
    "> [!TIP]\n> ",
    "## !workflow w\n",
    "## !skill s {when=x}\n",
    ":::!workflow{name=w}\nsteps: {}\n:::\n",
    "::!human{name=h channel=@channel/c}\n",
    ":::!human[]\n| name |\n|---|\n| a |\n:::\n",
    "@human/h",
    "[[human/h]]",
    "[L](#workflow/w)",
    "${x}",
    "${environment}",
    "::include{id=ins_self}\n",
    ":   def\n",
    "é",
    "—",
    "\u{feff}",
    "\r\n",
    "---\n",
    "spec: 2\n",
    "#",
    "{#id .class}",
    "name=on call",
    ":::when{environment=production}\n",
    ":::case{name=c}\n",
    ":::override{target=t}\ndisabled: false\n:::\n",
    "sk-abcdefghijklmnopqrstuvwxyz",
    "\t",
    "   ",
];

#[test]
fn random_mutations_never_panic() {
    let docs = fixtures();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut failures = Vec::new();
    for round in 0..4000 {
        let (path, base) = &docs[rng.below(docs.len())];
        let mut text: Vec<char> = base.chars().collect();
        for _ in 0..1 + rng.below(6) {
            let at = rng.below(text.len() + 1);
            match rng.below(4) {
                0 => {
                    let piece = PIECES[rng.below(PIECES.len())];
                    text.splice(at..at, piece.chars());
                }
                1 if !text.is_empty() => {
                    let end = (at + 1 + rng.below(40)).min(text.len());
                    text.drain(at.min(end)..end);
                }
                2 if !text.is_empty() => {
                    let i = at.min(text.len() - 1);
                    text[i] = PIECES[rng.below(PIECES.len())].chars().next().unwrap_or('x');
                }
                _ => {
                    // Duplicate a slice (repeats blocks, fences and names).
                    let end = (at + rng.below(200)).min(text.len());
                    let copy: Vec<char> = text[at.min(end)..end].to_vec();
                    text.splice(end..end, copy);
                }
            }
        }
        let s: String = text.into_iter().collect();
        if let Some(p) = exercise(&s) {
            failures.push(format!("round {round} (from {path}): {p}\n--- input ---\n{s}\n---"));
            if failures.len() > 3 {
                break;
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn pathological_inputs_never_panic() {
    let closed_deep: String =
        (3..120).map(|n| format!("{}context\n", ":".repeat(n))).rev().collect::<String>()
            + &(3..120).map(|n| format!("{}\n", ":".repeat(n))).collect::<String>();
    let deep: String =
        (0..200).rev().map(|n| format!("{}!workflow{{name=w{n}}}\n", ":".repeat(n + 3))).collect();
    let cases = [
        String::new(),
        "\n".repeat(10_000),
        ":".repeat(100_000),
        "---".into(),
        "---\n---\n".into(),
        "---\n: : :\n---\n".into(),
        "{".repeat(1000),
        format!("::must{{{}}}", "\"".repeat(999)),
        deep,
        "> [!TIP]".into(),
        "MUST: \n".repeat(1000),
        ":::glossary\n:::\n".into(),
        ":::!data{name=d}\n|a|\n|-|\n|1|2|\n:::\n".into(),
        "## !workflow w\n```yaml\n".into(),
        "::::!mcp{name=m}\n:::override{target=t}\n".into(),
        "[[".repeat(50_000),
        "${".repeat(50_000),
        "`a``".repeat(20_000),
        "[x](#".repeat(20_000),
        // Quadratic traps: many unclosed openers, openers longer than every closer.
        ":::foo\n".repeat(20_000),
        "::::rationale\n:::note-x\n".repeat(5_000),
        "::::x\n:::\n".repeat(10_000),
        closed_deep,
        format!(
            ":::when{{{}}}\nx\n:::\n",
            (0..50_000).map(|i| format!("k{i}=v")).collect::<Vec<_>>().join(" ")
        ),
        format!("::!human{{{}}}\n", "a ".repeat(50_000)),
    ];
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| exercise(c).map(|p| format!("{:?}…: {p}", &c.chars().take(40).collect::<String>())))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
