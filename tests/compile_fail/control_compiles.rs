// expect: ok
// The control: the same calls in a legal order compile, so a failure above is the mistake's.
use onnxrt::ndarray::Array2;
use onnxrt::{MemoryInfo, RunOptions, Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("identity_f32.onnx")?;
    let data = Array2::<f32>::zeros((1, 1));
    let x = Value::from_view(data.view())?;
    let mut binding = session.io_binding()?;
    binding.bind_input("x", &x)?;
    binding.run(None)?;
    drop(binding);
    drop(x);
    // The binding cases in a legal order: the allocator and tensor declared before the binding,
    // outputs and views dropped before the next run, copies kept across runs.
    let allocator = session.allocator(&MemoryInfo::cpu()?)?;
    let mut out = allocator.tensor::<f32>(&[1, 1])?;
    let x = Value::from_vec(&[1, 1], vec![1f32])?;
    let mut binding = session.io_binding()?;
    binding.bind_input("x", &x)?;
    binding.bind_output("y", &mut out)?;
    binding.run(None)?;
    let kept = binding.outputs()?[0].to_array::<f32>()?;
    {
        let outputs = binding.outputs()?;
        let view = outputs[0].view::<f32>()?;
        println!("{view:?} {kept:?}");
    }
    binding.run(None)?;
    drop(binding);
    println!("{:?}", out.view::<f32>()?);
    let mut options = RunOptions::new()?;
    options.set_tag("before")?;
    let terminator = options.terminator();
    std::thread::scope(|s| {
        s.spawn(|| session.run_with(onnxrt::NO_INPUTS, &[], Some(&options)).map(drop));
        terminator.terminate().expect("terminate");
    });
    Ok(())
}
