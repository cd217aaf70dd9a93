//! A small command-line parser: each subcommand declares its flags and options, and anything
//! else is a usage error (exit status 2) that names the subcommand's help.

use crate::error::{CliError, Result};

/// What a subcommand accepts.
pub struct Spec {
    /// The subcommand, for messages (`run`, `doctor`...).
    pub command: &'static str,
    /// Options without a value (`--json`).
    pub flags: &'static [&'static str],
    /// Options with a value (`--input NAME=FILE`), which may repeat.
    pub options: &'static [&'static str],
    /// Smallest and largest number of positional arguments.
    pub positionals: (usize, usize),
    /// Names of the positional arguments, for messages (`MODEL`).
    pub positional_names: &'static str,
}

/// A parsed command line.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Positional arguments, in order.
    pub positionals: Vec<String>,
    flags: Vec<&'static str>,
    options: Vec<(&'static str, String)>,
    /// `-h` / `--help` was given.
    pub help: bool,
}

impl Parsed {
    /// Whether `flag` was given.
    pub fn flag(&self, flag: &str) -> bool {
        self.flags.contains(&flag)
    }

    /// The last value of `option`, if given.
    pub fn value(&self, option: &str) -> Option<&str> {
        self.options.iter().rev().find(|(name, _)| *name == option).map(|(_, v)| v.as_str())
    }

    /// Every value of `option`, in order.
    pub fn values(&self, option: &str) -> Vec<&str> {
        self.options.iter().filter(|(name, _)| *name == option).map(|(_, v)| v.as_str()).collect()
    }
}

impl Spec {
    fn usage(&self, what: String) -> CliError {
        CliError::Usage(format!("{what}\nSee `onnxrt {} --help`.", self.command))
    }

    /// Parses the arguments after the subcommand's name.
    ///
    /// # Errors
    /// [`CliError::Usage`] for an unknown option, a missing value or a wrong number of arguments.
    pub fn parse(&self, args: &[String]) -> Result<Parsed> {
        let mut parsed = Parsed::default();
        let mut iter = args.iter();
        let mut only_positionals = false;
        while let Some(arg) = iter.next() {
            if only_positionals || !arg.starts_with('-') || arg == "-" {
                parsed.positionals.push(arg.clone());
                continue;
            }
            if arg == "--" {
                only_positionals = true;
                continue;
            }
            if arg == "-h" || arg == "--help" {
                parsed.help = true;
                continue;
            }
            let (name, inline) = match arg.split_once('=') {
                Some((name, value)) => (name, Some(value.to_owned())),
                None => (arg.as_str(), None),
            };
            if let Some(flag) = self.flags.iter().find(|f| **f == name) {
                if inline.is_some() {
                    return Err(self.usage(format!("{name} takes no value")));
                }
                parsed.flags.push(flag);
            } else if let Some(option) = self.options.iter().find(|o| **o == name) {
                let value = match inline {
                    Some(value) => value,
                    None => iter.next().cloned().ok_or_else(|| self.usage(format!("{name} needs a value")))?,
                };
                parsed.options.push((option, value));
            } else {
                return Err(self.usage(format!("unknown option `{name}` for `onnxrt {}`", self.command)));
            }
        }
        if parsed.help {
            return Ok(parsed);
        }
        let (min, max) = self.positionals;
        let n = parsed.positionals.len();
        if n < min || n > max {
            let expected = if self.positional_names.is_empty() {
                "no arguments".to_owned()
            } else {
                self.positional_names.to_owned()
            };
            return Err(self.usage(format!("`onnxrt {}` takes {expected}; got {n} argument(s)", self.command)));
        }
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: Spec = Spec {
        command: "run",
        flags: &["--strict"],
        options: &["--input", "--repeat"],
        positionals: (1, 1),
        positional_names: "MODEL",
    };

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn flags_options_and_positionals_are_separated() {
        let parsed =
            SPEC.parse(&strings(&["m.onnx", "--input", "a=a.npy", "--input=b=b.npy", "--strict"])).expect("parses");
        assert_eq!(parsed.positionals, ["m.onnx"]);
        assert_eq!(parsed.values("--input"), ["a=a.npy", "b=b.npy"]);
        assert!(parsed.flag("--strict"));
        assert_eq!(parsed.value("--repeat"), None);
    }

    #[test]
    fn mistakes_are_usage_errors() {
        for bad in [&["m.onnx", "--nope"][..], &["m.onnx", "--input"], &[], &["a", "b"], &["m", "--strict=1"]] {
            let err = SPEC.parse(&strings(bad)).expect_err("usage error");
            assert!(matches!(err, CliError::Usage(_)), "{err}");
            assert_eq!(err.exit_code(), 2);
        }
    }

    #[test]
    fn help_skips_the_argument_count() {
        assert!(SPEC.parse(&strings(&["--help"])).expect("help").help);
    }
}
