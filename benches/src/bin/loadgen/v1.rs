//! The private `/v1` protocol: `POST /v1/models/{name}/infer` with a picture, or with one raw f32
//! tensor (`tensor_body`) whose values come from a fixed seed.

use onnxrt_serve::tensor_body;

use crate::error::LoadgenError;
use crate::request::Request;
use crate::synthetic::Numbers;

/// The request for `model`: the picture at `image` if given, else a tensor of `shape`
/// (comma-separated, `1,3,224,224` when not given).
pub fn request(
    model: &str,
    image: Option<&std::path::Path>,
    shape: Option<&str>,
    seed: u64,
) -> Result<Request, LoadgenError> {
    let path = format!("/v1/models/{model}/infer");
    if let Some(image) = image {
        let body = std::fs::read(image)
            .map_err(|source| LoadgenError::Picture { path: image.display().to_string(), source })?;
        let png = image.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
        let content_type = if png { "image/png" } else { "image/jpeg" };
        return Ok(Request { path, headers: vec![("content-type".into(), content_type.into())], body: body.into() });
    }
    let text = shape.unwrap_or("1,3,224,224");
    let dims: Vec<usize> = text.split(',').map(|d| d.trim().parse()).collect::<Result<_, _>>().map_err(|_| {
        LoadgenError::ShapeArgument {
            given: text.into(),
            reason: "with --protocol v1 a comma-separated list, e.g. 1,3,224,224".into(),
        }
    })?;
    let mut numbers = Numbers::new(seed);
    let data: Vec<f32> = (0..dims.iter().product::<usize>()).map(|_| numbers.next_f32()).collect();
    let (shape_text, body) = tensor_body::encode(&dims, &data);
    let headers =
        vec![("content-type".into(), tensor_body::CONTENT_TYPE.into()), (tensor_body::SHAPE_HEADER.into(), shape_text)];
    Ok(Request { path, headers, body: body.into() })
}
