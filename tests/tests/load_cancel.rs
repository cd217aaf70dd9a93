//! `LoadCanceller` (C API 22) on the real runtime: on ORT >= 1.22 a cancelled canceller stops a
//! load with ORT's error and the same builder settings load without it; a canceller whose load has
//! ended is harmless to cancel; a load cancelled from another thread either finishes or fails with
//! the cancellation (never anything else). On 1.16.2 the commit is refused with
//! `Error::NeedsNewerRuntime`.

use onnxrt::{Error, LoadCanceller, Session};
use onnxrt_tests::model;

fn api_level() -> u32 {
    onnxrt::runtime_info().expect("runtime").api_level
}

fn is_cancellation(error: &Error) -> bool {
    error.to_string().to_ascii_lowercase().contains("cancel")
}

#[test]
fn a_cancelled_canceller_stops_the_load() {
    let canceller = LoadCanceller::new();
    canceller.cancel();
    assert!(canceller.is_cancelled());
    let result = Session::builder().load_canceller(&canceller).commit_from_file(model("mlp.onnx"));
    if api_level() < 22 {
        assert!(matches!(result, Err(Error::NeedsNewerRuntime { needs: 22, .. })), "{result:?}");
        return;
    }
    let error = result.expect_err("cancelled before it began");
    assert!(is_cancellation(&error), "{error:?}");
    // ORT's own code for it, by name.
    assert!(matches!(error, Error::Ort { code: onnxrt::ErrorCode::ModelLoadCanceled, .. }), "{error:?}");
    Session::builder().commit_from_file(model("mlp.onnx")).expect("without the canceller it loads");
}

#[test]
fn cancelling_after_the_load_is_harmless_and_racing_it_is_clean() {
    if api_level() < 22 {
        return;
    }
    let canceller = LoadCanceller::new();
    let session = Session::builder().load_canceller(&canceller).commit_from_file(model("mlp.onnx")).expect("loads");
    canceller.cancel();
    drop(session);
    // Racing: each load either finishes or reports the cancellation.
    for _ in 0..4 {
        let canceller = LoadCanceller::new();
        let other = canceller.clone();
        let stopper = std::thread::spawn(move || other.cancel());
        let result = Session::builder().load_canceller(&canceller).commit_from_file(model("convnet.onnx"));
        stopper.join().expect("cancel thread");
        if let Err(error) = result {
            assert!(is_cancellation(&error), "{error:?}");
        }
    }
}

/// One canceller shared by two loads at once: the second load starts and ends while the first is
/// held in its device selector (which the test releases), then a cancel must still reach the
/// first. Ordered by channels, not by timing.
#[test]
fn a_shared_canceller_reaches_every_load_in_progress() {
    if api_level() < 22 {
        return;
    }
    use std::sync::mpsc;
    let canceller = LoadCanceller::new();
    let (entered_tx, entered_rx) = mpsc::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = std::sync::Mutex::new(release_rx);
    let entered_tx = std::sync::Mutex::new(entered_tx);
    let first = {
        let canceller = canceller.clone();
        std::thread::spawn(move || {
            Session::builder()
                .load_canceller(&canceller)
                .device_selector(move |devices| {
                    let _ = entered_tx.lock().expect("lock").send(());
                    let _ = release_rx.lock().expect("lock").recv();
                    // The CPU provider's device (ORT always offers it).
                    vec![devices.iter().position(|d| d.provider == "CPUExecutionProvider").unwrap_or(0)]
                })
                .commit_from_file(model("mlp.onnx"))
        })
    };
    entered_rx.recv().expect("the first load reaches its selector");
    Session::builder()
        .load_canceller(&canceller)
        .commit_from_file(model("mlp.onnx"))
        .expect("the second load, not cancelled, ends while the first is held");
    canceller.cancel();
    release_tx.send(()).expect("release the first load");
    let result = first.join().expect("first load thread");
    let error = result.expect_err("the cancel reached the first load, still in progress");
    assert!(is_cancellation(&error), "{error:?}");
}
