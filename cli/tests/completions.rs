//! `onnxrt completions SHELL` prints a script that completes every subcommand; a shell it does
//! not know is a usage error.

mod common;

use common::*;

#[test]
fn completion_scripts_name_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let ran = onnxrt_with(&["completions", shell]);
        assert_eq!(ran.code, Some(0), "{}", ran.both());
        for command in ["inspect", "run", "doctor", "fetch", "bundle", "version", "provider-dir"] {
            assert!(ran.stdout.contains(command), "{shell} script lacks {command}:\n{}", ran.both());
        }
        assert!(!ran.stdout.contains("__doctor-gpu-session"), "the hidden child command is not offered");
    }
    let ran = onnxrt_with(&["completions", "tcsh"]);
    assert_eq!(ran.code, Some(2), "{}", ran.both());
}
