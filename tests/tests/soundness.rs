//! Regression tests for the soundness holes of the first outside audit whose fix is a runtime behaviour (the
//! ones the compiler now refuses are in tests/compile_fail/). Each test is the
//! program that showed the hole, rewritten to assert the fixed behaviour; they run in the
//! normal suite and under valgrind (tools/reliability/memcheck.sh runs this binary in CI), where
//! the old behaviour was an invalid read or a use of uninitialised memory.

use std::future::Future;
use std::pin::pin;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use ndarray::{array, Array1, ArrayD};
use onnxrt::{Error, MemoryInfo, Session, Value};
use onnxrt_tests::{builder, model, session};

/// The data address of a host tensor, for identity checks.
fn address(value: &Value<'_>) -> usize {
    value.view::<f32>().expect("f32 tensor").as_ptr() as usize
}

#[test]
fn bound_output_values_are_read_only_and_see_the_run() {
    // Hole 1: `IoBinding::outputs()` shares the bound output's memory. The values now borrow
    // the binding (the compile-fail cases check that) and refuse to be written.
    let session = session("add_f32.onnx");
    let a = Value::from_array(array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]).expect("a");
    let b = Value::from_array(array![[0.5f32, 0.5, 0.5], [1.0, 1.0, 1.0]]).expect("b");
    let mut sum = Value::from_vec(&[2, 3], vec![0f32; 6]).expect("sum");
    let sum_address = address(&sum);
    {
        let mut binding = session.io_binding().expect("binding");
        binding.bind_input("a", &a).expect("bind a");
        binding.bind_input("b", &b).expect("bind b");
        binding.bind_output("sum", &mut sum).expect("bind sum");
        binding.run(None).expect("run");
        let mut outputs = binding.outputs().expect("outputs");
        assert_eq!(outputs.len(), 1);
        // The value really is the bound tensor (which is why it must borrow the binding)...
        assert_eq!(address(&outputs[0]), sum_address);
        assert_eq!(outputs[0].view::<f32>().expect("view").as_slice(), Some(&[1.5f32, 2.5, 3.5, 5.0, 6.0, 7.0][..]));
        // ...so binding it as another binding's output (ORT would write it) is refused.
        let mut other = session.io_binding().expect("second binding");
        let refused = other.bind_output("sum", &mut outputs[0]).expect_err("a shared value is not writable");
        assert!(matches!(&refused, Error::ReadOnlyValue { operation } if operation.contains("`sum`")), "{refused:?}");
    }
    // The binding is gone; the bound value is the caller's again and holds the result.
    assert_eq!(sum.view::<f32>().expect("view").as_slice(), Some(&[1.5f32, 2.5, 3.5, 5.0, 6.0, 7.0][..]));
}

#[test]
fn device_bound_outputs_change_only_between_borrows() {
    // Hole 1, second half: with `bind_output_to_device(cpu)` ORT reuses its buffer across runs.
    // A view of the first run's output cannot be alive during the second run (the borrow checker
    // refuses it), so what a reader sees is always the run it asked after.
    let session = session("add_f32.onnx");
    let b = Value::from_array(array![[1.0f32, 1.0, 1.0], [1.0, 1.0, 1.0]]).expect("b");
    let first = Value::from_array(array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]).expect("a1");
    let second = Value::from_array(array![[10.0f32, 20.0, 30.0], [40.0, 50.0, 60.0]]).expect("a2");
    let cpu = MemoryInfo::cpu().expect("cpu");
    let mut binding = session.io_binding().expect("binding");
    binding.bind_input("b", &b).expect("bind b");
    binding.bind_output_to_device("sum", &cpu).expect("bind sum");
    binding.bind_input("a", &first).expect("bind a");
    binding.run(None).expect("first run");
    let kept: ArrayD<f32> = binding.outputs().expect("outputs")[0].to_array().expect("copy");
    binding.bind_input("a", &second).expect("bind a again");
    binding.run(None).expect("second run");
    let now: ArrayD<f32> = binding.outputs().expect("outputs")[0].to_array().expect("copy");
    assert_eq!(kept.as_slice(), Some(&[2.0f32, 3.0, 4.0, 5.0, 6.0, 7.0][..]));
    assert_eq!(now.as_slice(), Some(&[11.0f32, 21.0, 31.0, 41.0, 51.0, 61.0][..]));
}

#[test]
fn an_output_that_is_an_input_is_a_copy() {
    // Hole 2: a graph output that is a graph input came back as the input's own tensor, over
    // the caller's (borrowed) memory, labelled 'static. It is now copied.
    let session = session("passthrough.onnx");
    let seq_members = vec![Value::from_vec(&[2], vec![7.0f32, 8.0]).expect("member")];
    let s = Value::sequence(seq_members).expect("sequence");
    let t = Value::from_strings(&[2], &["left", "right"]).expect("strings");
    let (x_out, s_out, t_out) = {
        let data = Array1::from(vec![1.0f32, -2.0, 3.0, -4.0]);
        let x = Value::from_view(data.view()).expect("x");
        let mut outputs = session.run(&[("x", &x), ("s", &s), ("t", &t)]).expect("run");
        let x_out = outputs.take("x").expect("x out");
        assert_ne!(address(&x_out), data.as_ptr() as usize, "the output must not be the caller's buffer");
        (x_out, outputs.take("s").expect("s out"), outputs.take("t").expect("t out"))
        // `data` is freed here; the output must not point into it.
    };
    // Something else now likely occupies the freed block.
    let noise: Vec<f32> = std::iter::repeat_n(-7.0, 4).collect();
    assert_eq!(x_out.view::<f32>().expect("view").as_slice(), Some(&[1.0f32, -2.0, 3.0, -4.0][..]));
    assert_eq!(noise.len(), 4);
    let members = s_out.sequence_items().expect("members");
    assert_eq!(members[0].view::<f32>().expect("member").as_slice(), Some(&[7.0f32, 8.0][..]));
    assert_eq!(t_out.strings().expect("strings"), ["left", "right"]);
    drop(s);
    drop(t);
    // Still readable after the inputs are gone.
    assert_eq!(members[0].view::<f32>().expect("member").as_slice(), Some(&[7.0f32, 8.0][..]));
    assert_eq!(t_out.strings().expect("strings"), ["left", "right"]);
}

/// Wakes a parked thread.
struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

#[test]
fn an_async_output_that_is_an_input_outlives_the_inputs() {
    // Hole 2 with run_async: the owned input moved in was dropped with the future while the
    // output still pointed at it.
    let session = builder().intra_op_threads(2).commit_from_file(model("passthrough.onnx")).expect("session");
    let inputs = vec![
        ("x".to_owned(), Value::from_vec(&[3], vec![0.5f32, 1.5, 2.5]).expect("x")),
        ("s".to_owned(), Value::sequence(vec![Value::from_vec(&[1], vec![9.0f32]).expect("m")]).expect("s")),
        ("t".to_owned(), Value::from_strings(&[1], &["only"]).expect("t")),
    ];
    // Boxed (not pinned on the stack) so that it can really be dropped below.
    let mut future = Box::pin(session.run_async(inputs, &["x"]).expect("starts"));
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    // No time limit (valgrind on a loaded machine is slow); a future that never completes hangs.
    let mut outputs = loop {
        if let Poll::Ready(outputs) = future.as_mut().poll(&mut cx) {
            break outputs.expect("the async run succeeds");
        }
        std::thread::park_timeout(Duration::from_millis(50));
    };
    // The future (and the inputs it owned) are gone; the output is its own copy.
    drop(future);
    assert_eq!(outputs.names().collect::<Vec<_>>(), ["x"]);
    let x = outputs.take("x").expect("output x");
    let noise: Vec<f32> = std::iter::repeat_n(-7.0, 3).collect();
    assert_eq!(noise.len(), 3);
    assert_eq!(x.view::<f32>().expect("view").as_slice(), Some(&[0.5f32, 1.5, 2.5][..]));
}

#[test]
fn allocator_tensors_start_zeroed() {
    // Hole 4: `Allocator::tensor` handed out uninitialised host memory that `view` read.
    let session = session("add_f32.onnx");
    let allocator = session.allocator(&MemoryInfo::cpu().expect("cpu")).expect("allocator");
    let floats = allocator.tensor::<f32>(&[1024]).expect("tensor");
    assert!(floats.view::<f32>().expect("view").iter().all(|&v| v == 0.0));
    // The bool check reads every byte: they are all defined (and false).
    let bools = allocator.tensor::<bool>(&[257]).expect("tensor");
    assert!(bools.view::<bool>().expect("view").iter().all(|&v| !v));
    let halves = allocator.tensor::<onnxrt::half::f16>(&[3, 5]).expect("tensor");
    assert!(halves.view::<onnxrt::half::f16>().expect("view").iter().all(|v| v.to_f32() == 0.0));
}

#[test]
fn an_allocator_tensor_bound_as_output_lives_as_long_as_the_binding() {
    // Hole 5's legal order (the illegal one is a compile-fail case): the allocator and its
    // tensor are declared before the binding, so the binding is dropped first.
    let session = session("add_f32.onnx");
    let allocator = session.allocator(&MemoryInfo::cpu().expect("cpu")).expect("allocator");
    let mut out = allocator.tensor::<f32>(&[2, 3]).expect("tensor");
    let a = Value::from_array(array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]]).expect("a");
    let mut binding = session.io_binding().expect("binding");
    binding.bind_input("a", &a).expect("bind a");
    binding.bind_input("b", &a).expect("bind b");
    binding.bind_output("sum", &mut out).expect("bind sum");
    binding.run(None).expect("run");
    assert_eq!(binding.outputs().expect("outputs")[0].to_array::<f32>().expect("copy")[[1, 2]], 12.0);
    drop(binding);
    assert_eq!(out.view::<f32>().expect("view")[[0, 0]], 2.0);
}

/// A waker that drops the last handle of a session when woken (as an executor that drops a
/// finished task's captures would), then reports that it returned.
struct DroppingWaker {
    session: Mutex<Option<Session>>,
    returned: Mutex<Option<mpsc::Sender<()>>>,
}

impl Wake for DroppingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let session = self.session.lock().map(|mut s| s.take()).unwrap_or(None);
        drop(session);
        if let Some(sender) = self.returned.lock().map(|mut s| s.take()).unwrap_or(None) {
            let _ = sender.send(());
        }
    }
}

#[test]
fn dropping_the_last_session_from_a_waker_does_not_deadlock() {
    // Not UB but a hang: the waker runs on ORT's pool thread, before the run counts as done;
    // releasing the session there used to wait for that run forever.
    let session = builder().intra_op_threads(2).commit_from_file(model("slow_loop.onnx")).expect("session");
    let (sender, returned) = mpsc::channel();
    let dropping = Arc::new(DroppingWaker { session: Mutex::new(None), returned: Mutex::new(Some(sender)) });
    let waker = Waker::from(Arc::clone(&dropping));
    let mut cx = Context::from_waker(&waker);
    // Long enough that the first poll finds it pending (about 0.2 ms per step on one core; a few steps are enough, and stay quick under valgrind).
    let future = session.run_async(vec![("iters".to_owned(), Value::scalar(5i64).expect("iters"))], &[]);
    let mut future = pin!(future.expect("starts"));
    let pending = future.as_mut().poll(&mut cx).is_pending();
    assert!(pending, "the run finished before the first poll; give it more iterations");
    // From here the waker holds the only handle to the session. Its release is handed to a
    // thread of its own, which holds a clone of the environment until it is done.
    let env = onnxrt_tests::env();
    let env_holders = Arc::strong_count(&env);
    *dropping.session.lock().expect("lock") = Some(session);
    // No time limit: if releasing the session blocked ORT's thread, this would hang.
    returned.recv().expect("the waker returned: releasing the session did not block ORT's thread");
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(result) => assert_eq!(result.expect("the run succeeded").len(), 1),
        Poll::Pending => panic!("the future was woken but is not ready"),
    }
    // Let the release thread finish before the test (and, under valgrind, the process) ends:
    // a process that exits mid-release leaves ORT's half-released state, which memcheck reports
    // as lost. Bounded, and no assertion: in a parallel run other tests hold clones too.
    let settle = Instant::now() + Duration::from_secs(10);
    while Arc::strong_count(&env) >= env_holders && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(10));
    }
}
