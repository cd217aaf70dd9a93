//! Why a model file that ORT's protobuf parser refused is not an ONNX model.
//!
//! ORT only says "Protobuf parsing failed.". The usual causes in the field are a Git LFS pointer
//! checked out instead of the model, an HTML error or login page saved under the model's name, a
//! text file, and a download or copy cut short. This looks at the bytes and tells them apart; it
//! runs only after ORT has refused the model, so it costs nothing on the normal path.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::error::{Error, ErrorCode, ModelFileProblem};

/// How many leading bytes decide text, HTML and LFS pointers.
const HEAD: usize = 1024;

/// Whether ORT's error is its protobuf parser refusing the bytes.
fn is_parse_failure(error: &Error) -> bool {
    matches!(error, Error::Ort { code, message, .. }
        if *code == ErrorCode::InvalidProtobuf || crate::ort_messages::PROTOBUF_PARSE_FAILED.matches(message))
}

/// Replaces ORT's parse error for the file at `path` (or any ORT error for an empty file, which
/// ORT words differently) with [`Error::NotOnnxModel`]; other errors, and a file that can no
/// longer be read, pass through.
pub(crate) fn explain_file(error: Error, path: &Path) -> Error {
    if !matches!(error, Error::Ort { .. }) {
        return error;
    }
    let Ok(mut file) = File::open(path) else { return error };
    let Ok(size) = file.metadata().map(|m| m.len()) else { return error };
    if size > 0 && !is_parse_failure(&error) {
        return error;
    }
    let problem = classify(size, |offset, buf| {
        file.seek(SeekFrom::Start(offset))?;
        let mut filled = 0;
        while filled < buf.len() {
            match file.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    });
    not_onnx(error, Some(path), size, problem)
}

/// Replaces ORT's parse error for in-memory model bytes with [`Error::NotOnnxModel`].
pub(crate) fn explain_bytes(error: Error, bytes: &[u8]) -> Error {
    if !(is_parse_failure(&error) || bytes.is_empty() && matches!(error, Error::Ort { .. })) {
        return error;
    }
    let problem = classify(bytes.len() as u64, |offset, buf| {
        let rest = usize::try_from(offset).ok().and_then(|o| bytes.get(o..)).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        Ok(n)
    });
    not_onnx(error, None, bytes.len() as u64, problem)
}

fn not_onnx(error: Error, path: Option<&Path>, size: u64, problem: std::io::Result<ModelFileProblem>) -> Error {
    match (error, problem) {
        (Error::Ort { message, .. }, Ok(problem)) => {
            Error::NotOnnxModel { path: path.map(Path::to_owned), size, problem, message }
        }
        (error, _) => error,
    }
}

/// Reads up to `buf.len()` bytes at an offset, returning how many it read (fewer only at the end).
type ReadAt<'a> = dyn FnMut(u64, &mut [u8]) -> std::io::Result<usize> + 'a;

/// Decides what `size` bytes, read through `read_at`, look like.
fn classify(
    size: u64,
    mut read_at: impl FnMut(u64, &mut [u8]) -> std::io::Result<usize>,
) -> std::io::Result<ModelFileProblem> {
    if size == 0 {
        return Ok(ModelFileProblem::Empty);
    }
    let mut head = [0u8; HEAD];
    let n = read_at(0, &mut head)?;
    if let Some(problem) = text_kind(&head[..n]) {
        return Ok(problem);
    }
    scan_model(size, &mut read_at)
}

/// LFS pointer, HTML or plain text, judged from the first bytes.
fn text_kind(head: &[u8]) -> Option<ModelFileProblem> {
    // A multi-byte character cut at the end of `head` is still text.
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    if text.chars().any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t')) {
        return None;
    }
    if text.starts_with("version https://git-lfs.github.com/spec/") {
        let model_size = text.lines().find_map(|line| line.strip_prefix("size ")).and_then(|s| s.trim().parse().ok());
        return Some(ModelFileProblem::GitLfsPointer { model_size });
    }
    let start = text.trim_start().get(..16).unwrap_or(text.trim_start()).to_ascii_lowercase();
    if ["<!doctype html", "<html", "<head", "<body"].iter().any(|tag| start.starts_with(tag)) {
        return Some(ModelFileProblem::Html);
    }
    let line = text.trim_start().lines().next().unwrap_or_default();
    let first_line: String = line.chars().take(60).collect();
    Some(ModelFileProblem::Text { first_line })
}

/// `ModelProto`'s top-level fields and their wire types (0 varint, 2 length-delimited): the
/// versions and strings, `graph` (7), `opset_import` (8), `metadata_props` (14),
/// `training_info` (20), `functions` (25).
fn expected_wire_type(field: u64) -> Option<u64> {
    match field {
        1 | 5 => Some(0),
        2 | 3 | 4 | 6 | 7 | 8 | 14 | 20 | 25 => Some(2),
        _ => None,
    }
}

/// Walks the top-level fields of a `ModelProto`. A field that runs past the end after only
/// plausible fields means a cut-off file; anything else is unrecognised.
fn scan_model(size: u64, read_at: &mut ReadAt<'_>) -> std::io::Result<ModelFileProblem> {
    let mut offset = 0u64;
    while offset < size {
        let mut header = [0u8; 20];
        let n = read_at(offset, &mut header)?;
        let header = &header[..n];
        let Some((tag, tag_len)) = varint(header) else {
            return Ok(ModelFileProblem::Unrecognised);
        };
        let (field, wire_type) = (tag >> 3, tag & 7);
        if expected_wire_type(field) != Some(wire_type) {
            return Ok(ModelFileProblem::Unrecognised);
        }
        let Some((value, value_len)) = varint(&header[tag_len..]) else {
            // The tag fits but its varint does not: cut inside the header if the file ends here.
            let ends_here = header.len() < 20;
            return Ok(if ends_here {
                ModelFileProblem::Truncated { offset, needs: 1, has: 0 }
            } else {
                ModelFileProblem::Unrecognised
            });
        };
        let after_header = offset + (tag_len + value_len) as u64;
        if wire_type == 0 {
            offset = after_header;
            continue;
        }
        let has = size - after_header.min(size);
        if value > has {
            return Ok(ModelFileProblem::Truncated { offset, needs: value, has });
        }
        offset = after_header + value;
    }
    Ok(ModelFileProblem::Unrecognised)
}

/// A protobuf varint at the start of `bytes`: its value and length.
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(bytes: &[u8]) -> ModelFileProblem {
        classify(bytes.len() as u64, |offset, buf| {
            let rest = &bytes[offset as usize..];
            let n = rest.len().min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
            Ok(n)
        })
        .expect("in memory")
    }

    #[test]
    fn text_html_and_lfs() {
        assert_eq!(of(b""), ModelFileProblem::Empty);
        let lfs = b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 102400\n";
        assert_eq!(of(lfs), ModelFileProblem::GitLfsPointer { model_size: Some(102400) });
        assert_eq!(of(b"\n  <!DOCTYPE html><html><body>404</body></html>"), ModelFileProblem::Html);
        assert_eq!(
            of(b"{\"error\": \"not found\"}\n"),
            ModelFileProblem::Text { first_line: "{\"error\": \"not found\"}".into() }
        );
    }

    #[test]
    fn truncated_and_unrecognised() {
        // ir_version = 8, then a graph field declaring 100 bytes of which 3 are present.
        assert_eq!(
            of(&[0x08, 0x08, 0x3a, 100, 1, 2, 3]),
            ModelFileProblem::Truncated { offset: 2, needs: 100, has: 3 }
        );
        // Complete fields that ORT still refused: not a truncation.
        assert_eq!(of(&[0x08, 0x08, 0x3a, 1, 0]), ModelFileProblem::Unrecognised);
        // A field ModelProto does not have (field 9, varint).
        assert_eq!(of(&[0x48, 0x01, 0x3a, 100]), ModelFileProblem::Unrecognised);
        // A gzip header is binary but not protobuf.
        assert_eq!(of(&[0x1f, 0x8b, 0x08, 0x00]), ModelFileProblem::Unrecognised);
    }
}
