//! ImageNet-style preprocessing shared by `resnet_cuda` and `serve`: bounded decode, shorter side
//! to 256, center crop 224, mean/std, CHW; softmax and top-k on the logits.

use std::io::Cursor;

use onnxrt::ndarray::Array3;

/// Side of the square crop the model sees.
pub const SIDE: u32 = 224;
const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const STD: [f32; 3] = [0.229, 0.224, 0.225];

/// What an untrusted picture may be before it is decoded; see [`decode_bounded`].
#[derive(Debug, Clone, Copy)]
pub struct DecodeLimits {
    /// Widest and tallest accepted, in pixels (checked from the header, before decoding).
    pub max_side: u32,
    /// Most bytes the decoder may allocate (a decompression bomb stops here).
    pub max_alloc: u64,
    /// Narrowest and shortest accepted: a 1×1 picture carries no content to classify.
    pub min_side: u32,
}

impl Default for DecodeLimits {
    fn default() -> Self {
        // 8192² RGBA fits in 256 MiB; real photos are far below either bound.
        DecodeLimits { max_side: 8192, max_alloc: 256 << 20, min_side: 8 }
    }
}

/// Decodes a JPEG or PNG from memory within `limits`: the format is sniffed from the bytes, the
/// declared dimensions are checked before any pixel is decoded, and the decoder's allocations are
/// capped. Errors are messages meant for the sender of the picture.
pub fn decode_bounded(bytes: &[u8], limits: DecodeLimits) -> Result<image::RgbImage, String> {
    let reader = image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| format!("cannot read the picture: {e}"))?;
    if reader.format().is_none() {
        return Err("not a JPEG or PNG picture (unrecognised first bytes)".into());
    }
    let (width, height) = reader.into_dimensions().map_err(|e| format!("cannot read the picture's header: {e}"))?;
    if width.max(height) > limits.max_side {
        return Err(format!("picture is {width}x{height}; at most {0}x{0} is accepted", limits.max_side));
    }
    if width.min(height) < limits.min_side {
        return Err(format!("picture is {width}x{height}; at least {0}x{0} is needed", limits.min_side));
    }
    let mut reader = image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| format!("cannot read the picture: {e}"))?;
    let mut bounds = image::Limits::default();
    bounds.max_image_width = Some(limits.max_side);
    bounds.max_image_height = Some(limits.max_side);
    bounds.max_alloc = Some(limits.max_alloc);
    reader.limits(bounds);
    let picture = reader.decode().map_err(|e| format!("cannot decode the picture: {e}"))?;
    Ok(picture.to_rgb8())
}

/// Shorter side to 256, center crop 224, ImageNet mean/std, CHW. Any picture of at least 1×1
/// comes out as 3×224×224.
pub fn preprocess(picture: &image::RgbImage) -> Array3<f32> {
    let (w, h) = picture.dimensions();
    let scale = 256.0 / w.min(h).max(1) as f32;
    let (rw, rh) = (((w as f32 * scale).round() as u32).max(SIDE), ((h as f32 * scale).round() as u32).max(SIDE));
    let resized = image::imageops::resize(picture, rw, rh, image::imageops::FilterType::Triangle);
    let (x0, y0) = ((rw - SIDE) / 2, (rh - SIDE) / 2);
    let mut chw = Array3::<f32>::zeros((3, SIDE as usize, SIDE as usize));
    for (x, y, pixel) in image::imageops::crop_imm(&resized, x0, y0, SIDE, SIDE).to_image().enumerate_pixels() {
        for c in 0..3 {
            chw[[c, y as usize, x as usize]] = (pixel[c] as f32 / 255.0 - MEAN[c]) / STD[c];
        }
    }
    chw
}

/// Probabilities from logits (shifted by the maximum, so large logits do not overflow).
pub fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f32> = logits.iter().map(|&l| (l - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.into_iter().map(|e| e / sum).collect()
}

/// The `k` most probable classes, most probable first: `(class index, probability)`.
pub fn top_k(probabilities: &[f32], k: usize) -> Vec<(usize, f32)> {
    let mut ranked: Vec<(usize, f32)> = probabilities.iter().copied().enumerate().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked.truncate(k);
    ranked
}
