//! The raw-tensor request body of `serve`: `Content-Type: application/octet-stream`, the shape in
//! the `X-Tensor-Shape` header (`1,3,224,224` or `3,224,224`; comma-separated), the elements as
//! little-endian f32, row-major. The client side (`encode`) and the server side (`decode`) live
//! here together so they cannot drift apart.

/// The header that carries the shape.
pub const SHAPE_HEADER: &str = "x-tensor-shape";
/// The content type of a raw tensor.
pub const CONTENT_TYPE: &str = "application/octet-stream";

/// The header value and the body for `data` of `shape`.
pub fn encode(shape: &[usize], data: &[f32]) -> (String, Vec<u8>) {
    let shape_text = shape.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let body = data.iter().flat_map(|x| x.to_le_bytes()).collect();
    (shape_text, body)
}

/// Parses a shape header and a body into (shape, elements). Errors are messages for the sender.
pub fn decode(shape_header: Option<&str>, body: &[u8]) -> Result<(Vec<usize>, Vec<f32>), String> {
    let text =
        shape_header.ok_or_else(|| format!("a raw tensor needs the `{SHAPE_HEADER}` header, e.g. `1,3,224,224`"))?;
    let shape: Vec<usize> = text
        .split(',')
        .map(|d| d.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("`{SHAPE_HEADER}: {text}` is not a comma-separated list of dimensions"))?;
    let elements = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let expected_bytes = elements.and_then(|n| n.checked_mul(4));
    if expected_bytes != Some(body.len()) {
        return Err(format!(
            "shape {shape:?} needs {} bytes of little-endian f32, the body has {}",
            expected_bytes.map_or_else(|| "more than addressable".into(), |b| b.to_string()),
            body.len()
        ));
    }
    let data = body.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    Ok((shape, data))
}
