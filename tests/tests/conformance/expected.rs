//! `tests/conformance-expected.txt`: the checked-in outcome of every conformance case, so that a
//! case changing bucket, or failing for another reason, fails the test.
//!
//! One case a line, sorted, fields separated by tabs: `group/case`, the bucket, the reason (for a
//! non-pass), and optionally a note starting with `# ` that the comparison ignores (where the
//! outcome comes from, e.g. the Python cross-check). Lines starting with `#` are comments.
//! Blessing rewrites the cases from a run and keeps each note while its case's bucket stays.
//!
//! Outcomes are ORT's own (its kernels, its error messages), so each runtime CI runs has its own
//! file: `conformance-expected.txt` for ORT 1.16.2, `conformance-expected-<version>.txt` for any
//! other (tools/dev.sh's second pass runs the newest pinned runtime).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The file's opening comment, written again on every bless (`{ORT}` is the runtime's version).
const HEADER: &str = "\
# The expected outcome of every ONNX backend conformance case (tests/tests/conformance.rs):
# ORT {ORT} CPU, onnx 1.14.1's data, one intra-op thread. Any difference fails the test. After a
# deliberate change, rewrite this file and review its diff:
#   ONNXRT_CONFORMANCE_BLESS=1 cargo test -p onnxrt-tests --test conformance
# Fields (tab-separated): case, outcome, reason for a non-pass, and a note (`# ...`) that the test
# ignores; bless keeps a note while its case's outcome stays. Outcomes: passed; failed (ran, an
# output differs); unsupported (ORT refused to create the session); refused (the run was refused,
# by onnxrt's input checks or by ORT's Run); not-expressible (onnxrt cannot make or read the data);
# random (the expected output is one random draw: ran, values not compared).
# \"Python ORT 1.16.3\" notes: that case run through the official Python package (CONFORMANCE.md).
";

/// One case's checked-in line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub bucket: String,
    pub reason: String,
    pub note: String,
}

/// The version of the runtime the cases ran on.
fn runtime() -> String {
    onnxrt::runtime_info().map(|info| info.version).unwrap_or_default()
}

/// The expectations of the loaded runtime.
pub fn path() -> PathBuf {
    let version = runtime();
    let name = if version == "1.16.2" {
        "conformance-expected.txt".to_owned()
    } else {
        format!("conformance-expected-{version}.txt")
    };
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name)
}

fn parse(text: &str) -> Result<BTreeMap<String, Expected>, String> {
    let mut cases = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split('\t');
        let (Some(case), Some(bucket)) = (fields.next(), fields.next()) else {
            return Err(format!("line {}: expected `case<TAB>outcome[<TAB>reason]`: {line:?}", number + 1));
        };
        let mut reason = fields.next().unwrap_or("");
        let mut note = fields.next().unwrap_or("");
        if reason.starts_with("# ") {
            (reason, note) = ("", reason);
        }
        let entry = Expected { bucket: bucket.into(), reason: reason.into(), note: note.into() };
        if cases.insert(case.to_owned(), entry).is_some() {
            return Err(format!("line {}: {case} is listed twice", number + 1));
        }
    }
    Ok(cases)
}

fn read() -> Result<BTreeMap<String, Expected>, String> {
    let path = path();
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "cannot read {}: {e}; write it with `ONNXRT_CONFORMANCE_BLESS=1 cargo test -p onnxrt-tests --test conformance`",
            path.display()
        )
    })?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// One line a field can hold: no tabs or line breaks.
fn field(text: &str) -> String {
    text.replace(['\t', '\n', '\r'], " ")
}

/// Every case whose bucket or reason differs from the file, and every case only one side has,
/// as `case: old → new`.
pub fn compare(actual: &BTreeMap<String, (&str, &str)>) -> Result<Vec<String>, String> {
    let expected = read()?;
    let show =
        |bucket: &str, reason: &str| if reason.is_empty() { bucket.to_owned() } else { format!("{bucket} ({reason})") };
    let mut changes = Vec::new();
    for (case, (bucket, reason)) in actual {
        let reason = field(reason);
        match expected.get(case) {
            None => changes.push(format!("{case}: (not listed) → {}", show(bucket, &reason))),
            Some(old) if old.bucket != *bucket || old.reason != reason => {
                changes.push(format!("{case}: {} → {}", show(&old.bucket, &old.reason), show(bucket, &reason)));
            }
            Some(_) => {}
        }
    }
    for (case, old) in &expected {
        if !actual.contains_key(case) {
            changes.push(format!("{case}: {} → (no such case in the data)", show(&old.bucket, &old.reason)));
        }
    }
    Ok(changes)
}

/// Rewrites the file from this run; returns the cases whose note was dropped (bucket changed).
pub fn bless(actual: &BTreeMap<String, (&str, &str)>) -> std::io::Result<Vec<String>> {
    // A missing or unreadable file has no notes to keep.
    let old = read().unwrap_or_default();
    let mut text = HEADER.replace("{ORT}", &runtime());
    let mut dropped = Vec::new();
    for (case, (bucket, reason)) in actual {
        let note = match old.get(case) {
            Some(o) if o.bucket == *bucket => o.note.as_str(),
            Some(o) if !o.note.is_empty() => {
                dropped.push(format!("{case}: {}", o.note));
                ""
            }
            _ => "",
        };
        let mut line = format!("{case}\t{bucket}");
        if !reason.is_empty() || !note.is_empty() {
            let _ = write!(line, "\t{}", field(reason));
        }
        if !note.is_empty() {
            let _ = write!(line, "\t{}", field(note));
        }
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::write(path(), text)?;
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_with_and_without_reason_and_note() {
        let text = "# comment\nnode/a\tpassed\nnode/b\tfailed\tout differs\t# Python too\nnode/c\tpassed\t\t# kept\n";
        let cases = parse(text).expect("parses");
        assert_eq!(cases["node/a"], Expected { bucket: "passed".into(), reason: "".into(), note: "".into() });
        assert_eq!(cases["node/b"].reason, "out differs");
        assert_eq!(cases["node/b"].note, "# Python too");
        assert_eq!((cases["node/c"].reason.as_str(), cases["node/c"].note.as_str()), ("", "# kept"));
        assert!(parse("node/a\tpassed\nnode/a\tfailed\n").is_err(), "a case twice");
        assert!(parse("node/a\n").is_err(), "no outcome");
    }
}
