// expect: E0597
// An IoBinding must not outlive its session.
use onnxrt::Session;

fn main() -> onnxrt::Result<()> {
    let mut binding;
    {
        let session = Session::builder().commit_from_file("identity_f32.onnx")?;
        binding = session.io_binding()?;
    }
    binding.run(None)
}
