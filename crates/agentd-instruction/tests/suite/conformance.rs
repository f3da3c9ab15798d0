//! Conformance: every fixture under `tests/conformance/` is one case, reported by name.
//!
//! Categories: `core/` legacy pairs (`NNN.instruction.md` + strict `expected.yaml`),
//! `refusals/<case>/` (`doc.md` + `refusals.json`), and whole-document cases
//! `corpus/<case>/` (`doc.md`, `tree.json`, `context.json`, `delivered.txt`). The fixtures are
//! vendored from the specification's `conformance/` directory (see its NOTICE.md); the last test
//! checks the copy against that directory when it sits beside the repository.

use agentd_instruction::{Context, Family, Included, Options, Refusal, deliver_report, load_with, tree_json};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

/// The shared, read-only source of the vendored fixtures (present beside the repository).
fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/instruction-md/conformance")
}

/// `012-nested-is-text` belongs to the withdrawn draft (digest §10, NOTICE "Superseded fixture").
const SUPERSEDED: &[(&str, &str)] = &[(
    "012-nested-is-text",
    "withdrawn-draft fixture; under current rules its bare :::workflow is refused by the reserved-bare guard",
)];

/// Legacy `errors:` substrings whose wording the newer `refusals/` fixtures pin differently:
/// (legacy substring, current substring, the fixture that pins the current wording).
const LEGACY_WORDING: &[(&str, &str, &str)] = &[
    ("needs a name", "requires name", "refusals/identity-requires-name"),
    ("unique per kind", "(first declared at line", "refusals/duplicate-identity"),
    ("shadows a machinery name", "is a machinery kind — did you mean", "refusals/bare-machinery-kind"),
];

#[derive(Default)]
struct Outcome {
    passed: Vec<String>,
    failed: Vec<String>,
    notes: Vec<String>,
}

impl Outcome {
    fn finish(self, category: &str) {
        let total = self.passed.len() + self.failed.len();
        eprintln!("{category}: {}/{total} passed", self.passed.len());
        for n in &self.notes {
            eprintln!("  note: {n}");
        }
        assert!(total > 0, "{category}: no cases found under {}", root().display());
        assert!(
            self.failed.is_empty(),
            "{category}: {} failed:\n\n{}",
            self.failed.len(),
            self.failed.join("\n\n")
        );
    }
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

fn dirs(p: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(p)
        .map(|r| r.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn name(p: &Path) -> String {
    p.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

fn refusal_text(rs: &[Refusal]) -> String {
    rs.iter().map(|r| r.to_string()).collect::<Vec<_>>().join("\n")
}

/// Reads a legacy expectation strictly: an unknown key is a failure, not a skip.
fn core_case(doc: &str, expected: &str) -> Result<Vec<String>, String> {
    let exp: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(expected).map_err(|e| format!("expected.yaml: {e}"))?;
    let map = exp.as_mapping().ok_or("expected.yaml is not a mapping")?;
    let mut notes = Vec::new();
    let (mut valid, mut errors, mut grants, mut registers) = (None, Vec::new(), Vec::new(), None);
    for (k, v) in map {
        match k.as_str().unwrap_or("") {
            "spec" => {
                if v.as_str() != Some("1") {
                    return Err(format!("spec {v:?} is not the version this reader implements"));
                }
            }
            "valid" => valid = Some(v.as_bool().ok_or("valid must be a boolean")?),
            "errors" => {
                errors = v
                    .as_sequence()
                    .ok_or("errors must be a list")?
                    .iter()
                    .filter_map(|e| e.as_str())
                    .collect()
            }
            "grants" => {
                for g in v.as_sequence().ok_or("grants must be a list")? {
                    grants.push(g.as_str().unwrap_or("").parse::<Family>()?);
                }
            }
            "registers" => registers = Some(v.as_mapping().ok_or("registers must be a mapping")?),
            other => return Err(format!("unknown expectation key {other:?} (strict reader)")),
        }
    }
    let valid = valid.ok_or("expected.yaml has no valid:")?;
    let result = load_with(doc, &Options::with_grants(grants));
    match (&result, valid) {
        (Ok(_), false) => return Err("expected a refusal, but the document loaded".into()),
        (Err(rs), true) => {
            return Err(format!("expected the document to load, refused:\n{}", refusal_text(rs)));
        }
        _ => {}
    }
    if let Err(rs) = &result {
        let text = refusal_text(rs);
        for e in errors {
            if text.contains(e) {
                continue;
            }
            match LEGACY_WORDING.iter().find(|(old, _, _)| *old == e) {
                Some((old, new, pin)) if text.contains(new) => {
                    notes.push(format!("legacy wording {old:?} checked as {new:?} (pinned by {pin})"))
                }
                _ => return Err(format!("refusal text lacks {e:?}:\n{text}")),
            }
        }
    }
    if let (Some(reg), Ok(doc)) = (registers, &result) {
        for (k, v) in reg {
            let want: Vec<&str> =
                v.as_sequence().ok_or("registers lists")?.iter().filter_map(|x| x.as_str()).collect();
            let got: Vec<String> = match k.as_str().unwrap_or("") {
                "workflows" => doc.workflows().into_iter().map(|w| w.name).collect(),
                "mcp_servers" => doc.mcp_servers().into_iter().map(|m| m.name).collect(),
                other => return Err(format!("unknown registers key {other:?} (strict reader)")),
            };
            if got != want {
                return Err(format!(
                    "registers.{}: expected {want:?}, got {got:?}",
                    k.as_str().unwrap_or("")
                ));
            }
        }
    }
    Ok(notes)
}

#[test]
fn core_fixtures() {
    let dir = root().join("core");
    let mut out = Outcome::default();
    let mut files: Vec<PathBuf> = fs::read_dir(&dir).expect("core/").flatten().map(|e| e.path()).collect();
    files.sort();
    for md in files.iter().filter(|p| p.to_string_lossy().ends_with(".instruction.md")) {
        let case = name(md).trim_end_matches(".instruction.md").to_string();
        let expected = dir.join(format!("{case}.expected.yaml"));
        if let Some((_, why)) = SUPERSEDED.iter().find(|(c, _)| *c == case) {
            // Skipped as a pass/fail case, but its superseded status is itself checked.
            match load_with(&read(md), &Options::default()) {
                Err(rs) if rs.iter().any(|r| r.code == "bare-machinery-kind") => {
                    out.notes.push(format!("{case}: skipped ({why})"));
                }
                other => out.failed.push(format!(
                    "{case}: superseded fixture should hit the reserved-bare guard, got {other:?}"
                )),
            }
            continue;
        }
        match core_case(&read(md), &read(&expected)) {
            Ok(notes) => {
                out.notes.extend(notes.into_iter().map(|n| format!("{case}: {n}")));
                out.passed.push(case);
            }
            Err(e) => out.failed.push(format!("core/{case}: {e}")),
        }
    }
    out.finish("core");
}

/// A JSON-Schema validator line from older fixture copies (optional; this reader emits none).
fn is_schema_line(message: &str) -> bool {
    message.starts_with("schema ") || (message.starts_with('/') && message.contains(": "))
}

/// Grants for a case: `context.json`'s `"grants"` when given (proposal S5), else every family.
fn options_for(dir: &Path) -> Result<Options, String> {
    let path = dir.join("context.json");
    if !path.exists() {
        return Ok(Options::all_grants());
    }
    let v: Value = serde_json::from_str(&read(&path)).map_err(|e| format!("context.json: {e}"))?;
    match v.get("grants").and_then(Value::as_array) {
        None => Ok(Options::all_grants()),
        Some(list) => {
            let fams: Result<Vec<Family>, String> =
                list.iter().map(|g| g.as_str().unwrap_or("").parse()).collect();
            Ok(Options::with_grants(fams?))
        }
    }
}

fn refusal_case(dir: &Path) -> Result<(), String> {
    let doc = read(&dir.join("doc.md"));
    let expected: Value =
        serde_json::from_str(&read(&dir.join("refusals.json"))).map_err(|e| e.to_string())?;
    let expected: Vec<(Option<u64>, String)> = expected
        .as_array()
        .ok_or("refusals.json is not an array")?
        .iter()
        .map(|e| (e["line"].as_u64(), e["message"].as_str().unwrap_or("").to_string()))
        .collect();
    let got = match load_with(&doc, &options_for(dir)?) {
        Ok(_) => return Err("expected refusals, but the document loaded".into()),
        Err(rs) => rs,
    };
    let got: Vec<(Option<u64>, String)> =
        got.iter().map(|r| (r.line.map(|l| l as u64), r.message.clone())).collect();
    let optional: Vec<&(Option<u64>, String)> = expected.iter().filter(|e| is_schema_line(&e.1)).collect();
    let required: Vec<&(Option<u64>, String)> = expected.iter().filter(|e| !is_schema_line(&e.1)).collect();
    let got_required: Vec<&(Option<u64>, String)> = got.iter().filter(|g| !optional.contains(g)).collect();
    if got_required != required {
        let show = |v: &[&(Option<u64>, String)]| {
            v.iter()
                .map(|(l, m)| format!("  {}: {m}", l.map(|l| l.to_string()).unwrap_or_else(|| "null".into())))
                .collect::<Vec<_>>()
                .join("\n")
        };
        return Err(format!("expected:\n{}\ngot:\n{}", show(&required), show(&got_required)));
    }
    Ok(())
}

#[test]
fn refusal_fixtures() {
    let mut out = Outcome::default();
    for dir in dirs(&root().join("refusals")) {
        let case = name(&dir);
        match refusal_case(&dir) {
            Ok(()) => out.passed.push(case),
            Err(e) => out.failed.push(format!("refusals/{case}:\n{e}")),
        }
    }
    out.finish("refusals");
}

/// Includes among corpus cases: `ins_<case>` is `<case>/doc.md`, or its `delivered.txt` when
/// the case ships no source.
fn includes(corpus: &Path) -> BTreeMap<String, Included> {
    let mut map = BTreeMap::new();
    for dir in dirs(corpus) {
        let id = format!("ins_{}", name(&dir));
        if dir.join("doc.md").exists() {
            map.insert(id, Included::Source(read(&dir.join("doc.md"))));
        } else if dir.join("delivered.txt").exists() {
            map.insert(id, Included::Delivered(read(&dir.join("delivered.txt"))));
        }
    }
    map
}

/// The first place two JSON values differ, as a path.
fn json_diff(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => {
                        if let Some(d) = json_diff(&format!("{path}.{k}"), p, q) {
                            return Some(d);
                        }
                    }
                    (p, q) => return Some(format!("{path}.{k}: expected {p:?}, got {q:?}")),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if let Some(d) = json_diff(&format!("{path}[{i}]"), p, q) {
                    return Some(d);
                }
            }
            (x.len() != y.len()).then(|| format!("{path}: expected {} items, got {}", x.len(), y.len()))
        }
        _ => (a != b).then(|| format!("{path}: expected {a}, got {b}")),
    }
}

fn text_diff(expected: &str, got: &str) -> String {
    let (e, g): (Vec<&str>, Vec<&str>) = (expected.split('\n').collect(), got.split('\n').collect());
    for i in 0..e.len().max(g.len()) {
        if e.get(i) != g.get(i) {
            return format!(
                "first difference at line {}:\n  expected: {:?}\n  got:      {:?}",
                i + 1,
                e.get(i),
                g.get(i)
            );
        }
    }
    "texts differ".into()
}

/// One whole-document case: parse, compare the tree, deliver with its context, compare bytes.
fn corpus_case(dir: &Path, includes: &BTreeMap<String, Included>) -> Result<(), String> {
    let doc = read(&dir.join("doc.md"));
    let opts = options_for(dir)?;
    let parsed = load_with(&doc, &opts).map_err(|rs| format!("refused:\n{}", refusal_text(&rs)))?;
    let mut problems = Vec::new();
    if dir.join("tree.json").exists() {
        let want: Value = serde_json::from_str(&read(&dir.join("tree.json"))).map_err(|e| e.to_string())?;
        if let Some(d) = json_diff("$", &want, &tree_json(&parsed)) {
            problems.push(format!("tree.json: {d}"));
        }
    }
    if dir.join("delivered.txt").exists() {
        let mut ctx = match dir.join("context.json") {
            p if p.exists() => {
                let v: Value = serde_json::from_str(&read(&p)).map_err(|e| e.to_string())?;
                Context::from_json(&v)?
            }
            _ => Context::default(),
        };
        ctx.includes = includes.clone();
        ctx.options = opts;
        let d = deliver_report(&parsed, &ctx);
        let want = read(&dir.join("delivered.txt"));
        if d.text != want {
            problems.push(format!("delivered.txt: {}", text_diff(&want, &d.text)));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
}

#[test]
fn corpus_cases() {
    let corpus = root().join("corpus");
    let includes = includes(&corpus);
    let mut out = Outcome::default();
    for dir in dirs(&corpus) {
        let case = name(&dir);
        if !dir.join("doc.md").exists() {
            out.notes.push(format!("{case}: no doc.md in the vendored copy; used only as an include target"));
            continue;
        }
        match corpus_case(&dir, &includes) {
            Ok(()) => out.passed.push(case),
            Err(e) => out.failed.push(format!("corpus/{case}:\n{e}")),
        }
    }
    out.finish("corpus");
}

/// agentd's own cases, in the same formats, for behaviour the upstream fixtures do not pin.
fn own() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases")
}

#[test]
fn own_refusal_cases() {
    let mut out = Outcome::default();
    for dir in dirs(&own().join("refusals")) {
        let case = name(&dir);
        match refusal_case(&dir) {
            Ok(()) => out.passed.push(case),
            Err(e) => out.failed.push(format!("cases/refusals/{case}:\n{e}")),
        }
    }
    out.finish("own refusal cases");
}

#[test]
fn own_delivery_cases() {
    let corpus = own().join("corpus");
    let includes = includes(&corpus);
    let mut out = Outcome::default();
    for dir in dirs(&corpus) {
        let case = name(&dir);
        match corpus_case(&dir, &includes) {
            Ok(()) => out.passed.push(case),
            Err(e) => out.failed.push(format!("cases/corpus/{case}:\n{e}")),
        }
    }
    out.finish("own delivery cases");
}

/// No fixture directory goes unwalked: every directory is a known category or a case in one.
#[test]
fn every_fixture_directory_is_walked() {
    let known = ["core", "refusals", "corpus", "registry", "history"];
    for dir in dirs(&root()) {
        assert!(known.contains(&name(&dir).as_str()), "unknown fixture directory {}", dir.display());
    }
    for dir in dirs(&root().join("refusals")) {
        assert!(
            dir.join("doc.md").exists() && dir.join("refusals.json").exists(),
            "{} is incomplete",
            dir.display()
        );
    }
}

fn files_under(base: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![base.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(base) {
                out.push(rel.to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// The vendored copy is byte-identical to the shared fixtures (checked when they are present).
#[test]
fn vendored_fixtures_match_shared() {
    let shared = shared();
    if !shared.is_dir() {
        eprintln!("skipped: {} is not present", shared.display());
        return;
    }
    let mut problems = Vec::new();
    for rel in files_under(&shared) {
        let ours = root().join(&rel);
        match (fs::read(shared.join(&rel)), fs::read(&ours)) {
            (Ok(a), Ok(b)) if a == b => {}
            (Ok(_), Ok(_)) => problems.push(format!("{} differs from the shared copy", rel.display())),
            _ => problems.push(format!("{} is not vendored", rel.display())),
        }
    }
    assert!(
        problems.is_empty(),
        "re-vendor the fixtures (see tests/conformance/NOTICE.md):\n{}",
        problems.join("\n")
    );
}
