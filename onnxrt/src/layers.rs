//! The layer rule (ARCHITECTURE.md), checked: a module imports only from its own layer or below.
//! Reads every `crate::` path in `src/` (comments and `#[cfg(test)]` modules left out; a path
//! through a re-export of `lib.rs` counts as the module it re-exports). Paths that climb out of
//! a top-level module with `super::super::` are not read: the crate writes `crate::` instead.

use std::path::Path;

/// The layers, bottom up: the one list (ARCHITECTURE.md's module table is checked against it).
/// `lib.rs` (re-exports) and this file stand above them all.
const LAYERS: [&[&str]; 4] = [
    &[
        "loader",
        "api",
        "status",
        "handle",
        "error",
        "element",
        "float8",
        "cuda_runtime",
        "cuda_driver",
        "ffi_guard",
        "allowed_keys",
        "ort_messages",
        "gpu_failure",
        "guide",
    ],
    &["env", "memory", "run_options", "cuda_stream", "cuda_ipc", "lora", "device_list"],
    &["value", "providers", "custom_op", "ep_device", "pinned_plugin"],
    &["session", "io_binding", "allocator", "allocator_stats", "profiling", "cuda_graphs", "cuda_graph", "compile"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|names| names.contains(&module))
}

/// The top-level modules a file's code names through `crate::`, with their 1-based line.
fn imports(source: &str) -> Vec<(usize, String)> {
    let (mut found, mut skip_depth, mut depth, mut test_next) = (Vec::new(), None, 0i32, false);
    let lines: Vec<&str> = source.lines().map(|l| l.split("//").next().unwrap_or("")).collect();
    for (n, line) in lines.iter().enumerate() {
        if line.trim() == "#[cfg(test)]" {
            test_next = true;
            continue;
        }
        if test_next && line.trim_start().starts_with("mod ") && line.contains('{') {
            skip_depth = Some(depth);
        }
        test_next = false;
        depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
        if let Some(d) = skip_depth {
            if depth <= d {
                skip_depth = None;
            }
            continue;
        }
        for (at, _) in line.match_indices("crate::") {
            // A `use` group may span lines: read on from here (a group is never 40 lines long).
            let rest = lines[n..lines.len().min(n + 40)].join(" ")[at + "crate::".len()..].to_string();
            for head in group_heads(&rest) {
                let name: String = head.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    found.push((n + 1, name));
                }
            }
        }
    }
    found
}

/// The paths a `crate::` path starts: itself, or each member of a `{a::b, c::{d, e}}` group.
fn group_heads(rest: &str) -> Vec<String> {
    let Some(group) = rest.strip_prefix('{') else { return vec![rest.to_owned()] };
    let (mut heads, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                heads.push(group[start..i].to_owned());
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.push(group[start..i].to_owned());
                start = i + 1;
            }
            _ => {}
        }
    }
    heads
}

/// What `lib.rs` re-exports (`pub use module::{A, B}`), as item name -> module.
fn reexports(lib: &str) -> Vec<(String, String)> {
    let mut map = Vec::new();
    for statement in lib.split(';').filter_map(|s| s.find("pub use ").map(|at| &s[at + 8..])) {
        let module = statement.split("::").next().unwrap_or_default();
        for name in statement.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|n| !n.is_empty()) {
            map.push((name.to_owned(), module.to_owned()));
        }
    }
    map
}

fn visit(dir: &Path, src: &Path, roots: &[(String, String)], problems: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            visit(&path, src, roots, problems);
            continue;
        }
        let file = path.strip_prefix(src).expect("under src").to_string_lossy().into_owned();
        if file == "lib.rs" || file == "layers.rs" || !file.ends_with(".rs") {
            continue;
        }
        let module = file.split(['/', '.']).next().unwrap_or_default();
        let Some(own) = layer(module) else {
            problems.push(format!("{file}: module `{module}` is in no layer (add it to LAYERS)"));
            continue;
        };
        for (line, mut target) in imports(&std::fs::read_to_string(&path).expect("source is readable")) {
            if let Some((_, module)) = roots.iter().find(|(name, _)| *name == target) {
                target = module.clone();
            }
            match layer(&target) {
                Some(to) if to > own => {
                    problems.push(format!("{file}:{line}: upward import {module} (L{own}) -> {target} (L{to})"))
                }
                Some(_) => {}
                None => problems.push(format!("{file}:{line}: `crate::{target}` names no layered module")),
            }
        }
    }
}

#[test]
fn every_import_points_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let roots = reexports(&std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs is readable"));
    let mut problems = Vec::new();
    visit(&src, &src, &roots, &mut problems);
    assert!(problems.is_empty(), "imports against the layers of ARCHITECTURE.md:\n{}", problems.join("\n"));
}

/// ARCHITECTURE.md's module table (rows `| L<n> | `module` | what it holds |`) lists exactly the
/// modules of `LAYERS`, each in its layer.
#[test]
fn architecture_md_lists_every_module_in_its_layer() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md");
    let text = std::fs::read_to_string(path).expect("ARCHITECTURE.md is readable");
    let listed: Vec<(usize, String)> = text
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let layer = cells.get(1)?.strip_prefix('L')?.parse().ok()?;
            let module = cells.get(2)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((layer, module.to_owned()))
        })
        .collect();
    let expected: Vec<(usize, String)> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(layer, names)| names.iter().map(move |name| (layer, (*name).to_owned())))
        .collect();
    let missing: Vec<_> = expected.iter().filter(|m| !listed.contains(m)).collect();
    let extra: Vec<_> = listed.iter().filter(|m| !expected.contains(m)).collect();
    assert!(
        missing.is_empty() && extra.is_empty() && listed.len() == expected.len(),
        "ARCHITECTURE.md's module table against LAYERS in onnxrt/src/layers.rs (layer, module): \
         missing {missing:?}, not in LAYERS {extra:?}, {} rows for {} modules",
        listed.len(),
        expected.len()
    );
}
