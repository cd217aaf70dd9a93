//! The documents stay true to the tree: every relative link of every markdown file resolves (and
//! its `#anchor` names a heading of the target), and every repository path a document or a code
//! comment cites exists. Records of how results were reached (`docs/history/`,
//! `benches/results/`) are checked for their links only: they may quote names of their day.
//!
//! A cited path is a word that starts with a top-level folder of the repository
//! (`onnxrt/src/layers.rs`, `tools/gpu/`) or an upper-case markdown name (`SECURITY.md`); it must
//! exist relative to the repository, to the citing file's folder or to a workspace crate
//! (`tests/regenerate.rs` of onnx-proto); a Rust target may be cited without `.rs`
//! (`examples/resnet_cuda`). Words with placeholders (`<file>`, `*`, `$VAR`, `…`) are not paths.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Documents another branch writes, linked here before that branch is merged. Remove an entry
/// once the file is in the tree.
const ARRIVING: &[&str] = &[];

/// Folders whose files are records of their day: links checked, cited paths not.
const RECORDS: &[&str] = &["docs/history", "benches/results"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_owned()
}

/// Every file under `dir` with one of `extensions`, skipping build output and hidden folders
/// (except `.ci`).
fn files(dir: &Path, extensions: &[&str], found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable folder") {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            let skipped = (name.starts_with('.') && name != ".ci")
                || ["target", "node_modules", "corpus", "artifacts-known"].contains(&name);
            if !skipped {
                files(&path, extensions, found);
            }
        } else if extensions.iter().any(|e| name.ends_with(e)) {
            found.push(path);
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(repo()).unwrap_or(path).to_string_lossy().into_owned()
}

fn is_record(path: &Path) -> bool {
    let rel = relative(path);
    RECORDS.iter().any(|r| rel.starts_with(r))
}

/// The workspace's crate folders (where a crate-relative citation may start).
fn crate_dirs() -> Vec<PathBuf> {
    let mut manifests = Vec::new();
    files(&repo(), &["Cargo.toml"], &mut manifests);
    manifests.iter().filter_map(|m| m.parent().map(Path::to_owned)).collect()
}

/// GitHub's anchor of a heading: lower case, spaces to `-`, punctuation other than `-` and `_`
/// dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut found = BTreeSet::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            found.insert(slug(line.trim_start_matches('#')));
        }
    }
    found
}

fn arriving(path: &Path) -> bool {
    let rel = relative(path);
    ARRIVING.iter().any(|a| rel == *a)
}

/// Relative links `[text](target)` outside code blocks and code spans.
fn links(markdown: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_code = false;
    for (n, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Code spans are not links.
        let text: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = after[..end].split_whitespace().next().unwrap_or_default();
            if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
                found.push((n + 1, target.to_owned()));
            }
            rest = &after[end.min(after.len())..];
        }
    }
    found
}

#[test]
fn every_relative_link_resolves() {
    let mut markdown = Vec::new();
    files(&repo(), &[".md"], &mut markdown);
    assert!(markdown.len() > 10, "found only {} markdown files", markdown.len());
    let mut broken = Vec::new();
    for file in &markdown {
        let text = std::fs::read_to_string(file).expect("readable markdown");
        for (line, target) in links(&text) {
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if path.is_empty() { file.clone() } else { file.parent().expect("parent").join(path) };
            if arriving(&resolved) {
                continue;
            }
            if !resolved.exists() {
                broken.push(format!("{}:{line}: {target} does not exist", relative(file)));
            } else if !anchor.is_empty() && resolved.extension().is_some_and(|e| e == "md") {
                let target_text = std::fs::read_to_string(&resolved).expect("readable markdown");
                if !anchors(&target_text).contains(anchor) {
                    broken.push(format!("{}:{line}: {target}: no heading with that anchor", relative(file)));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The words of `text` that look like repository paths (see the module docs).
fn cited_paths(text: &str, top_level: &BTreeSet<String>) -> Vec<String> {
    let is_path_char = |c: char| c.is_alphanumeric() || "_-./".contains(c);
    let mut found = Vec::new();
    for word in text.split(|c: char| !is_path_char(c) && !"<>*$…{}~".contains(c)) {
        if word.is_empty() || word.contains(['<', '>', '*', '$', '…', '{', '}', '~']) || word.contains("...") {
            continue;
        }
        let word = word.trim_end_matches(['.', ',', ':', ';']);
        let first = word.split('/').next().unwrap_or_default();
        if word.starts_with("../") {
            found.push(word.to_owned());
            continue;
        }
        let upper_md = !word.contains('/')
            && word.ends_with(".md")
            && word.trim_end_matches(".md").chars().all(|c| c.is_ascii_uppercase() || c == '_' || c == '-')
            && word.len() > 3;
        if (word.contains('/') && top_level.contains(first)) || upper_md {
            found.push(word.to_owned());
        }
    }
    found
}

fn comment_text(file: &Path, source: &str) -> Vec<(usize, String)> {
    let rust = file.extension().is_some_and(|e| e == "rs");
    source
        .lines()
        .enumerate()
        .filter_map(|(n, line)| {
            let at = if rust { line.find("//") } else { line.find('#') }?;
            // `#` inside a quoted string or a URL is not a comment; nor is `//` in `://`.
            if rust && line[..at].ends_with(':') {
                return None;
            }
            Some((n + 1, line[at..].to_owned()))
        })
        .collect()
}

/// `line` with the targets of its `[text](target)` links left out.
fn without_link_targets(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        out.push_str(&rest[..at + 1]);
        rest = rest[at + 2..].find(')').map_or("", |end| &rest[at + 2 + end + 1..]);
    }
    out.push_str(rest);
    out
}

/// Whether `cited`, read from `dir`, climbs out of the repository.
fn escapes(dir: &Path, cited: &str) -> bool {
    let mut depth = relative(dir).split('/').filter(|c| !c.is_empty()).count() as i64;
    for part in cited.split('/') {
        match part {
            ".." => depth -= 1,
            "" | "." => {}
            _ => depth += 1,
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

#[test]
fn every_cited_path_exists() {
    let root = repo();
    let top_level: BTreeSet<String> = std::fs::read_dir(&root)
        .expect("readable repository")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| n == ".ci" || (!n.starts_with('.') && n != "target"))
        .collect();
    let crates = crate_dirs();
    let mut sources = Vec::new();
    files(&root, &[".md", ".rs", ".sh", ".py", ".toml"], &mut sources);
    let mut missing = Vec::new();
    for file in sources.iter().filter(|f| !is_record(f)) {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        let markdown = file.extension().is_some_and(|e| e == "md");
        let lines: Vec<(usize, String)> = if markdown {
            // Link targets are the link test's; the words around them are cites.
            text.lines().enumerate().map(|(n, l)| (n + 1, without_link_targets(l))).collect()
        } else {
            comment_text(file, &text)
        };
        for (line, content) in lines {
            for cited in cited_paths(&content, &top_level) {
                if cited.starts_with("../") {
                    // A document's commands run from the repository root; a comment's path is the file's.
                    if escapes(file.parent().expect("parent"), &cited) || (markdown && escapes(&root, &cited)) {
                        missing.push(format!("{}:{line}: {cited} (outside the repository)", relative(file)));
                    }
                    continue;
                }
                let bases = std::iter::once(root.clone())
                    .chain(file.parent().map(Path::to_owned))
                    .chain(crates.iter().cloned())
                    .chain(std::iter::once(root.join("docs")));
                let exists = bases.into_iter().any(|base| {
                    let path = base.join(&cited);
                    path.exists() || path.with_extension("rs").exists() || arriving(&path)
                });
                if !exists {
                    missing.push(format!("{}:{line}: {cited}", relative(file)));
                }
            }
        }
    }
    assert!(missing.is_empty(), "cited paths that are not in the tree:\n{}", missing.join("\n"));
}

/// Every markdown file outside the records, with its text.
fn current_markdown() -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    files(&repo(), &[".md"], &mut found);
    found
        .into_iter()
        .filter(|f| !is_record(f))
        .filter_map(|f| std::fs::read_to_string(&f).ok().map(|t| (f, t)))
        .collect()
}

/// The backticked spans of `line`.
fn backticked(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// Backticked `*.rs` and `*.sh` names may be crate-relative (`server/rest.rs`, `session/run.rs`)
/// or bare (`dev.sh`): a relative one must exist under the repository, the citing file's folder,
/// a crate, or a crate's `src/` or `tools/`; a bare one somewhere in the tree.
#[test]
fn every_backticked_source_file_exists() {
    let root = repo();
    let mut bases = vec![root.clone(), root.join("docs"), root.join("tools")];
    for dir in crate_dirs() {
        bases.push(dir.join("src"));
        bases.push(dir.join("tools"));
        bases.push(dir);
    }
    let mut all = Vec::new();
    files(&root, &[".rs", ".sh"], &mut all);
    let names: BTreeSet<String> =
        all.iter().filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_owned)).collect();
    let mut missing = Vec::new();
    for (file, text) in current_markdown() {
        for (n, line) in text.lines().enumerate() {
            for span in backticked(line) {
                for word in span.split_whitespace() {
                    let word = word.split("::").next().unwrap_or_default().trim_end_matches([',', ';', ':']);
                    let cited = word.ends_with(".rs") || word.ends_with(".sh");
                    if !cited || word.contains(['<', '>', '*', '$', '…', '{', '}', '~', '(', '=']) {
                        continue;
                    }
                    let exists = if word.contains('/') {
                        let here = file.parent().map(Path::to_owned).into_iter();
                        bases.iter().cloned().chain(here).any(|b| b.join(word).exists())
                    } else {
                        names.contains(word)
                    };
                    if !exists {
                        missing.push(format!("{}:{}: {word}", relative(&file), n + 1));
                    }
                }
            }
        }
    }
    assert!(missing.is_empty(), "backticked source files that are not in the tree:\n{}", missing.join("\n"));
}

/// A citation `F::name`, where `F.rs` is a file of tests/tests/, names a test function of that file.
#[test]
fn every_cited_test_exists() {
    let tests = repo().join("tests/tests");
    let mut missing = Vec::new();
    for (file, text) in current_markdown() {
        for (n, line) in text.lines().enumerate() {
            let is_ident = |c: char| c.is_alphanumeric() || c == '_';
            for word in line.split(|c: char| !is_ident(c) && c != ':') {
                let mut parts = word.split("::");
                let (Some(target), Some(name), None) = (parts.next(), parts.next(), parts.next()) else { continue };
                // A longer path (`session::run_async::on_done`) is a module path, not a test.
                if target.is_empty() || name.is_empty() {
                    continue;
                }
                let Ok(source) = std::fs::read_to_string(tests.join(format!("{target}.rs"))) else { continue };
                if !source.contains(&format!("fn {name}(")) {
                    missing.push(format!("{}:{}: {target}::{name}", relative(&file), n + 1));
                }
            }
        }
    }
    assert!(missing.is_empty(), "cited tests that are not in their file:\n{}", missing.join("\n"));
}

/// SECURITY.md lists every `pub unsafe fn` of the `onnxrt` crate among its `unsafe` doors.
#[test]
fn security_lists_every_unsafe_door() {
    let root = repo();
    let security = std::fs::read_to_string(root.join("SECURITY.md")).expect("SECURITY.md");
    let mut sources = Vec::new();
    files(&root.join("onnxrt/src"), &[".rs"], &mut sources);
    let mut missing = Vec::new();
    for file in sources {
        let text = std::fs::read_to_string(&file).expect("readable source");
        for (n, line) in text.lines().enumerate() {
            let Some(rest) = line.trim_start().strip_prefix("pub unsafe fn ") else { continue };
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !security.contains(&format!("::{name}`")) {
                missing.push(format!("{}:{}: {name}", relative(&file), n + 1));
            }
        }
    }
    assert!(missing.is_empty(), "pub unsafe fns SECURITY.md does not list:\n{}", missing.join("\n"));
}

/// Sections of docs/soundness.md cited from code, as `docs/soundness.md §N` (a numbered
/// invariant) or `docs/soundness.md, "Public traits"` (a heading): each must name a section the
/// document has.
#[test]
fn every_cited_soundness_section_exists() {
    let document = std::fs::read_to_string(repo().join("docs/soundness.md")).expect("docs/soundness.md");
    let headings: Vec<&str> =
        document.lines().filter_map(|l| l.strip_prefix('#')).map(|l| l.trim_start_matches('#').trim()).collect();
    let mut sources = Vec::new();
    files(&repo(), &[".rs"], &mut sources);
    let mut missing = Vec::new();
    let mut cited = 0;
    for file in sources.iter().filter(|f| !is_record(f)) {
        let text = std::fs::read_to_string(file).expect("readable source");
        for (n, line) in text.lines().enumerate() {
            let Some(at) = line.find("docs/soundness.md") else { continue };
            let rest = &line[at + "docs/soundness.md".len()..];
            let found = if let Some(number) = rest.strip_prefix(" §") {
                let number: String = number.chars().take_while(char::is_ascii_digit).collect();
                Some(
                    headings
                        .iter()
                        .any(|h| h.starts_with(&format!("{number}. ")))
                        .then_some(())
                        .ok_or(format!("§{number}")),
                )
            } else if let Some(quoted) = rest.strip_prefix(", \"") {
                let name = quoted.split('"').next().unwrap_or_default();
                Some(headings.contains(&name).then_some(()).ok_or(format!("\"{name}\"")))
            } else {
                None
            };
            match found {
                Some(Ok(())) => cited += 1,
                Some(Err(section)) => missing.push(format!("{}:{}: {section}", relative(file), n + 1)),
                None => {}
            }
        }
    }
    assert!(cited >= 10, "the citations were found ({cited})");
    assert!(missing.is_empty(), "sections of docs/soundness.md cited but absent: {missing:#?}");
}

/// The markdown a reader meets (the top level and docs/, history aside) stays within the size
/// issue 43 set: half of the 237 KB it measured. New material is paid for by moving narratives
/// and old measurements to docs/history word for word.
const MARKDOWN_BUDGET: u64 = 118_500;

#[test]
fn the_current_documents_stay_within_their_size_budget() {
    let root = repo();
    let mut sizes = Vec::new();
    for dir in [root.clone(), root.join("docs")] {
        for entry in std::fs::read_dir(&dir).expect("folder") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "md") && path.is_file() {
                sizes.push((relative(&path), std::fs::metadata(&path).expect("metadata").len()));
            }
        }
    }
    let total: u64 = sizes.iter().map(|(_, n)| n).sum();
    sizes.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    assert!(
        total <= MARKDOWN_BUDGET,
        "*.md and docs/*.md hold {total} bytes, over the budget of {MARKDOWN_BUDGET}; the largest: {:?}",
        &sizes[..sizes.len().min(5)]
    );
}
