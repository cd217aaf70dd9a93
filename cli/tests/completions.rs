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

#[test]
fn completion_offers_distribution_and_provider_names() {
    let ran = onnxrt_with(&["completions", "bash"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    for name in
        ["cpu-1.16.2-registry", "gpu-1.16.2", "gpu-cuda13-1.30.0", "tensorrt", "cuda", "XNNPACK", "random zeros"]
    {
        assert!(ran.stdout.contains(name), "bash script lacks {name}");
    }
    // Offered, not enforced: a name outside the list gets the command's own message.
    let ran = onnxrt_with(&["doctor", "--dist", "nonsense"]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("no distribution named `nonsense`"), "{}", ran.both());
}
