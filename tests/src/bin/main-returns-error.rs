//! A user's program in miniature: `main` returns `Result<(), onnxrt::Error>` and loads the model
//! named by its first argument. The `errors` tests check that the process prints the error's
//! message, fix included, not the variant's fields.

fn main() -> Result<(), onnxrt::Error> {
    let path = std::env::args_os().nth(1).unwrap_or_default();
    onnxrt::Session::builder().commit_from_file(path)?;
    Ok(())
}
