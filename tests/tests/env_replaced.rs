//! Issue 19, item 7: a configured environment that is dropped before the next session is made
//! is replaced by a default one, and that is said out loud (its own test binary: the process's
//! environment is global).

use onnxrt::{Environment, LogLevel, Session};
use onnxrt_tests::model;

#[test]
fn a_dropped_configured_environment_is_reported() {
    let env = Environment::builder().name("configured").log_level(LogLevel::Verbose).commit().expect("commit");
    assert_eq!(env.name(), "configured");
    drop(env);
    let session = Session::builder().commit_from_file(model("add_f32.onnx")).expect("loads");
    let replaced = session.environment();
    assert_eq!(replaced.name(), "onnxrt", "a default environment took its place");
    let warning = replaced
        .recent_log()
        .into_iter()
        .find(|r| r.message.contains("`configured`"))
        .expect("the replacement is reported in recent_log");
    assert_eq!(warning.level, LogLevel::Warning);
    assert!(
        warning.message.contains("Verbose") && warning.message.contains("keep the Arc<Environment>"),
        "{}",
        warning.message
    );
    // Said once: a later session in the same default environment adds nothing.
    let again = Session::builder().commit_from_file(model("add_f32.onnx")).expect("loads");
    let count = again.environment().recent_log().iter().filter(|r| r.message.contains("`configured`")).count();
    assert_eq!(count, 1);
}
