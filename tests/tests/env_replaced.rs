//! The process keeps one environment: a configured environment whose `Arc` is dropped
//! stays the process's (an earlier version replaced it by a default one, with a warning); a
//! second `commit` with the same settings returns it, one with other settings is
//! `Error::EnvironmentExists` naming the settings in force; the log hook and level change in
//! place. Its own test binary: the process's environment is global.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use onnxrt::{Environment, Error, LogLevel, LogRecord, Session};
use onnxrt_tests::model;

/// Log ids of the records one hook saw, and how many.
#[derive(Default)]
struct Seen {
    ids: Mutex<Vec<String>>,
    count: AtomicUsize,
}

impl Seen {
    fn hook(self: &Arc<Self>) -> impl Fn(&LogRecord) + Send + Sync + 'static {
        let seen = Arc::clone(self);
        move |record| {
            seen.count.fetch_add(1, Ordering::SeqCst);
            seen.ids.lock().expect("ids").push(record.log_id.clone());
        }
    }

    fn saw(&self, log_id: &str) -> bool {
        self.ids.lock().expect("ids").iter().any(|id| id == log_id)
    }
}

fn session(log_id: &str) -> Session {
    Session::builder().log_id(log_id).commit_from_file(model("add_f32.onnx")).expect("loads")
}

#[test]
fn the_process_keeps_its_configured_environment() {
    let first = Arc::new(Seen::default());
    let env = Environment::builder().name("configured").log_level(LogLevel::Verbose).log_hook(first.hook()).commit();
    let env = env.expect("commit");
    drop(env);

    // A session made without an environment joins the configured one: its settings stay.
    let loaded = session("before-swap");
    let live = Arc::clone(loaded.environment());
    assert_eq!(live.name(), "configured");
    assert_eq!(live.log_level(), LogLevel::Verbose);
    assert!(first.saw("before-swap"), "the committed hook sees the session's verbose records");
    assert!(live.recent_log().iter().all(|r| !r.message.contains("was dropped")), "no replacement warning");
    drop(loaded);

    // The same settings and no hook: the same environment.
    let again = Environment::builder().name("configured").log_level(LogLevel::Verbose).commit().expect("same");
    assert!(Arc::ptr_eq(&again, &live));
    // Other settings, or a hook: refused, naming what is in force.
    let other = Environment::builder().name("other").commit().expect_err("other settings");
    match &other {
        Error::EnvironmentExists { name, in_force, asked } => {
            assert_eq!(name, "configured");
            assert!(in_force.contains("Verbose") && in_force.contains("a log hook"), "{in_force}");
            assert!(asked.contains("`other`") && asked.contains("Warning"), "{asked}");
        }
        unexpected => panic!("expected EnvironmentExists, got {unexpected:?}"),
    }
    assert!(other.to_string().contains("set_log_hook"), "{other}");
    let with_hook = Environment::builder().name("configured").log_level(LogLevel::Verbose).log_hook(|_| ()).commit();
    assert_eq!(with_hook.expect_err("a hook is set in place, not by commit").variant(), "EnvironmentExists");

    // The hook changes in place: records of a session made afterwards reach the new hook only.
    let second = Arc::new(Seen::default());
    live.set_log_hook(second.hook());
    drop(session("after-swap"));
    assert!(second.saw("after-swap"), "the new hook sees the new session's records");
    assert!(!first.saw("after-swap"), "the replaced hook sees none of them");

    // So does the level: at Warning, loading a session logs nothing verbose.
    live.set_log_level(LogLevel::Warning).expect("level");
    assert_eq!(live.log_level(), LogLevel::Warning);
    let before = second.count.load(Ordering::SeqCst);
    drop(session("at-warning"));
    assert!(!second.saw("at-warning"), "no verbose record after set_log_level(Warning)");
    assert!(second.count.load(Ordering::SeqCst) >= before);

    // And without a hook, records reach only the `log` crate and `recent_log`.
    live.set_log_level(LogLevel::Verbose).expect("level");
    live.remove_log_hook();
    drop(session("no-hook"));
    assert!(!second.saw("no-hook") && !first.saw("no-hook"));
}
