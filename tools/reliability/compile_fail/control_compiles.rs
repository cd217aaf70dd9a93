// expect: ok
// The control: the same calls in a legal order compile, so a failure above is the mistake's.
use onnxrt::ndarray::Array2;
use onnxrt::{RunOptions, Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("identity_f32.onnx")?;
    let data = Array2::<f32>::zeros((1, 1));
    let x = Value::from_view(data.view())?;
    let mut binding = session.io_binding()?;
    binding.bind_input("x", &x)?;
    binding.run(None)?;
    drop(binding);
    drop(x);
    let mut options = RunOptions::new()?;
    options.set_tag("before")?;
    let terminator = options.terminator();
    std::thread::scope(|s| {
        s.spawn(|| session.run_with(onnxrt::NO_INPUTS, &[], Some(&options)).map(drop));
        terminator.terminate().expect("terminate");
    });
    Ok(())
}
