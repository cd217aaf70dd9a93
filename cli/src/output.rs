//! Rendering: aligned text tables for people, JSON for programs, and the number formats both use.

use std::fmt::Write as _;
use std::time::Duration;

use crate::error::{CliError, Result};

/// A table of text cells with a header row, printed with aligned columns.
#[derive(Debug, Clone)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Text printed on its own line under a row, indented to the last column (e.g. a fix).
    notes: Vec<Option<String>>,
}

impl Table {
    /// An empty table with these column headers.
    pub fn new(headers: &[&str]) -> Table {
        Table { headers: headers.iter().map(|h| (*h).to_owned()).collect(), rows: Vec::new(), notes: Vec::new() }
    }

    /// Adds a row (missing cells are empty, extra cells are dropped).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.row_with_note(cells, None);
    }

    /// Adds a row with a note printed under it, aligned with the last column.
    pub fn row_with_note<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>, note: Option<String>) {
        let mut cells: Vec<String> = cells.into_iter().map(Into::into).collect();
        cells.resize(self.headers.len(), String::new());
        self.rows.push(cells);
        self.notes.push(note.filter(|n| !n.is_empty()));
    }

    /// The table as text, one line per row, columns separated by two spaces.
    pub fn render(&self) -> String {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let indent: usize = widths.iter().take(columns.saturating_sub(1)).map(|w| w + 2).sum();
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String| {
            let mut text = String::new();
            for (i, cell) in cells.iter().enumerate() {
                if i + 1 < columns {
                    let _ = write!(text, "{cell:<width$}  ", width = widths[i]);
                } else {
                    text.push_str(cell);
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(&self.headers, &mut out);
        for (row, note) in self.rows.iter().zip(&self.notes) {
            line(row, &mut out);
            if let Some(note) = note {
                for note_line in note.lines() {
                    let _ = writeln!(out, "{:indent$}{note_line}", "");
                }
            }
        }
        out
    }
}

/// A list of `key  value` lines with aligned values.
pub fn key_values(pairs: &[(&str, String)]) -> String {
    let width = pairs.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    for (key, value) in pairs {
        let _ = writeln!(out, "{key:<width$}  {value}");
    }
    out
}

/// Writes `text` to stdout. A reader that went away (`onnxrt … | head`) is
/// [`CliError::ClosedPipe`], which ends the command quietly with status 0, as cargo and ripgrep do.
///
/// # Errors
/// [`CliError::ClosedPipe`] for a closed pipe, [`CliError::Io`] for any other write error.
pub fn out(text: &str) -> Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()).map_err(|e| match e.kind() {
        std::io::ErrorKind::BrokenPipe => CliError::ClosedPipe,
        _ => CliError::Io { context: "cannot write to stdout".into(), source: e },
    })
}

/// [`out`] with a newline.
pub fn outln(text: &str) -> Result<()> {
    out(&format!("{text}\n"))
}

/// Prints a JSON value, pretty, to stdout.
pub fn print_json(value: &serde_json::Value) -> Result<()> {
    // A serde_json::Value always serializes; keep a fallback rather than a panic.
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    outln(&text)
}

/// A byte count for people: `2704 B`, `1.5 KiB`, `12.3 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A duration in milliseconds with three significant-ish decimals: `0.041 ms`, `12.3 ms`.
pub fn millis(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1.0 {
        format!("{ms:.3} ms")
    } else if ms < 100.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

/// Seconds for an ETA: `41 s`, `3 min 20 s`.
#[cfg_attr(not(feature = "fetch"), allow(dead_code))] // fetch's progress lines
pub fn eta(seconds: u64) -> String {
    if seconds < 60 {
        format!("{seconds} s")
    } else if seconds < 3600 {
        format!("{} min {} s", seconds / 60, seconds % 60)
    } else {
        format!("{} h {} min", seconds / 3600, seconds % 3600 / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns_and_indent_notes() {
        let mut table = Table::new(&["A", "BB", "C"]);
        table.row(["x", "long cell", "end"]);
        table.row_with_note(["yy", "b", "c"], Some("fix: do it".into()));
        let text = table.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "A   BB         C");
        assert_eq!(lines[1], "x   long cell  end");
        assert_eq!(lines[2], "yy  b          c");
        assert_eq!(lines[3], "               fix: do it");
    }

    #[test]
    fn numbers_for_people() {
        assert_eq!(bytes(2704), "2.6 KiB");
        assert_eq!(bytes(12), "12 B");
        assert_eq!(bytes(3 * 1024 * 1024), "3.0 MiB");
        assert_eq!(millis(Duration::from_micros(41)), "0.041 ms");
        assert_eq!(eta(200), "3 min 20 s");
    }
}
