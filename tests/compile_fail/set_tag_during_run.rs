// expect: E0502
// Run options being read by a run cannot be changed meanwhile (only terminated, through a
// RunTerminator, which ORT allows).
use onnxrt::{RunOptions, Session};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("identity_f32.onnx")?;
    let mut options = RunOptions::new()?;
    std::thread::scope(|s| {
        s.spawn(|| session.run_with(onnxrt::NO_INPUTS, &[], Some(&options)).map(drop));
        options.set_tag("changed").expect("tag");
    });
    Ok(())
}
