//! What the server and a model's worker process say to each other: one length-prefixed JSON
//! message at a time over the worker's stdin and stdout (the control pipe), the tensors' bytes in
//! two shared-memory files (`/dev/shm`), one per direction, named in each message by offset and
//! length. The files are written and read with `pwrite`/`pread` (no mapping, so this crate keeps
//! no `unsafe`): one copy into the page cache of a memory-only file and one out of it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;

use onnxrt::Value;
use serde::{Deserialize, Serialize};

use crate::oip::tensor;

/// A message longer than this is a broken pipe, not a message (names and shapes only).
const MAX_MESSAGE: u32 = 16 << 20;

/// A tensor in a shared-memory file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Placed {
    /// Its name.
    pub name: String,
    /// The protocol's datatype (`FP32`, `BYTES`…).
    pub datatype: String,
    /// Its shape.
    pub shape: Vec<i64>,
    /// Where its bytes start in the file.
    pub offset: u64,
    /// How many bytes.
    pub len: u64,
}

/// The server's request to a worker: run these inputs (in the request file), answer these outputs
/// (all when empty).
#[derive(Debug, Serialize, Deserialize)]
pub struct RunRequest {
    /// The inputs, in the request file.
    pub inputs: Vec<Placed>,
    /// The outputs wanted, by name (all when empty).
    pub outputs: Vec<String>,
    /// Return the runtime's arena memory after this run (an outsized request).
    pub shrink_arena: bool,
}

/// A worker's answer.
#[derive(Debug, Serialize, Deserialize)]
pub enum Reply {
    /// The model is loaded; requests may come (the worker's first message).
    Loaded,
    /// The outputs, in the answer file.
    Ran(Vec<Placed>),
    /// ONNX Runtime refused the request's inputs: the client's fault (400), with its reason.
    Refused(String),
    /// The run (or the model's load) failed for another reason (500).
    Failed(String),
}

/// Sends `message` as its length (u32, little-endian) and its JSON.
pub fn send<T: Serialize>(to: &mut impl Write, message: &T) -> std::io::Result<()> {
    let json = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    let length = u32::try_from(json.len()).map_err(std::io::Error::other)?;
    to.write_all(&length.to_le_bytes())?;
    to.write_all(&json)?;
    to.flush()
}

/// The next message, or `None` when the other side closed the pipe between messages.
pub fn receive<T: for<'de> Deserialize<'de>>(from: &mut impl Read) -> std::io::Result<Option<T>> {
    let mut length = [0u8; 4];
    match from.read_exact(&mut length) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(error),
    }
    let length = u32::from_le_bytes(length);
    if length > MAX_MESSAGE {
        return Err(std::io::Error::other(format!("a control message of {length} bytes (a broken pipe)")));
    }
    let mut json = vec![0u8; length as usize];
    from.read_exact(&mut json)?;
    serde_json::from_slice(&json).map(Some).map_err(std::io::Error::other)
}

/// Writes `values` one after another into `file` from its start; describes where each went.
pub fn place<'v, 'd: 'v>(
    file: &File,
    values: impl IntoIterator<Item = (&'v str, &'v Value<'d>)>,
) -> Result<Vec<Placed>, String> {
    let mut offset = 0u64;
    let mut placed = Vec::new();
    for (name, value) in values {
        let (datatype, shape) = tensor::datatype_and_shape(name, value)?;
        let info = value.tensor_info().map_err(|e| format!("`{name}`: {e}"))?;
        let owned;
        let bytes: &[u8] = if info.element_type == onnxrt::ElementType::String {
            owned = tensor::raw_of(name, value)?;
            &owned
        } else {
            value.host_bytes().map_err(|e| format!("`{name}`: {e}"))?
        };
        file.write_all_at(bytes, offset).map_err(|e| format!("writing `{name}` to shared memory: {e}"))?;
        placed.push(Placed {
            name: name.to_owned(),
            datatype: datatype.to_owned(),
            shape,
            offset,
            len: bytes.len() as u64,
        });
        offset += bytes.len() as u64;
    }
    Ok(placed)
}

/// The tensor `placed` describes, read from `file`.
pub fn take(file: &File, placed: &Placed) -> Result<Value<'static>, String> {
    let length = usize::try_from(placed.len).map_err(|_| format!("`{}`: {} bytes", placed.name, placed.len))?;
    let mut bytes = vec![0u8; length];
    file.read_exact_at(&mut bytes, placed.offset)
        .map_err(|e| format!("reading `{}` from shared memory: {e}", placed.name))?;
    tensor::value_from_raw(&placed.name, &placed.datatype, &placed.shape, &bytes)
}
