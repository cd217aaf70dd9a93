//! A string a model's config gave (a provider's name, an option, a library's path), or a message
//! that may echo one, as a log line or an error shows it: control characters escaped, so a
//! newline cannot forge a log line nor a NUL reach the log, and a long one cut, saying how long
//! it was, so a 200 KB name is not echoed whole.

use std::fmt;

/// The characters shown of a config's string.
pub const MOST: usize = 200;

/// The characters shown of a message that carries one or several (a parser's or onnxrt's).
pub const MOST_OF_A_MESSAGE: usize = 2000;

/// `text` as logs and errors show it (see the module doc), cut after `most` characters.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'t> {
    text: &'t str,
    most: usize,
}

/// A config's string `text`, shown: escaped, at most [`MOST`] characters.
pub fn shown(text: &str) -> Shown<'_> {
    Shown { text, most: MOST }
}

/// A message `text` that may echo a config's strings, shown: escaped, at most
/// [`MOST_OF_A_MESSAGE`] characters.
pub fn shown_message(text: &str) -> Shown<'_> {
    Shown { text, most: MOST_OF_A_MESSAGE }
}

/// Characters a terminal or log viewer may act on rather than print: controls, line and
/// paragraph separators, and the bidirectional overrides that reorder what a reader sees.
fn acts(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut chars = self.text.char_indices();
        for (_, c) in chars.by_ref().take(self.most) {
            if acts(c) {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        if chars.next().is_some() {
            write!(f, "… ({} bytes)", self.text.len())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{shown, shown_message, MOST};

    #[test]
    fn control_characters_are_escaped_and_long_strings_cut() {
        assert_eq!(shown("openvino").to_string(), "openvino");
        assert_eq!(shown("cpu\nINFO forged line\0").to_string(), r"cpu\nINFO forged line\u{0}");
        assert_eq!(shown("a\u{202e}b\u{2028}c\tä").to_string(), r"a\u{202e}b\u{2028}c\tä");
        let long = "é".repeat(100_000);
        let text = shown(&long).to_string();
        assert_eq!(text, format!("{}… (200000 bytes)", "é".repeat(MOST)));
        assert_eq!(shown(&"x".repeat(MOST)).to_string(), "x".repeat(MOST), "no cut at the limit");
        assert_eq!(
            shown_message(&"y".repeat(5000)).to_string().chars().count(),
            2000 + "… (5000 bytes)".chars().count()
        );
    }
}
