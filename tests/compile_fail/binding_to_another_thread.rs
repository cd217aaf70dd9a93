// expect: E0277
// An IoBinding is used from one thread at a time; it cannot be sent to another.
use onnxrt::Session;

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("identity_f32.onnx")?;
    let mut binding = session.io_binding()?;
    std::thread::scope(|s| {
        s.spawn(move || binding.run(None));
    });
    Ok(())
}
