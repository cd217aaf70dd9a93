//! sha256 of files and streams, computed while the bytes pass.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// A writer that hashes and counts what goes through it.
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> HashingWriter<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        HashingWriter { inner, hasher: Sha256::new(), written: 0 }
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The inner writer and the hex digest of everything written.
    pub fn finish(self) -> (W, String) {
        (self.inner, hex(&self.hasher.finalize()))
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// sha256 of a file, in lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    let file = File::open(path).map_err(Error::io(format!("opening {}", path.display())))?;
    sha256_reader(file).map_err(Error::io(format!("reading {}", path.display())))
}

/// sha256 of everything `reader` gives, in lowercase hex.
pub fn sha256_reader(mut reader: impl Read) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Copies the regular file `source` into `dest` (an open, empty work file), hashing the bytes on
/// the way, and returns their sha256. Anything but a regular file (a FIFO, a device, a folder) is
/// refused, checked on the opened handle; at most `max_bytes` are read, whatever the file claims
/// to hold. The caller extracts from `dest` itself, so the bytes hashed are the bytes used.
pub fn copy_regular_file(source: &Path, dest: &mut File, max_bytes: u64) -> Result<String> {
    let what = format!("ONNXRT_ARCHIVE={}", source.display());
    let not_regular = || Error::BadVariable {
        var: "ONNXRT_ARCHIVE",
        value: source.display().to_string(),
        why: "is not a regular file (a FIFO, device or folder?); give the path of the archive file itself".into(),
    };
    // Opened without waiting (a FIFO swapped in after any earlier `stat` would block a plain
    // open until a writer came), then checked on the descriptor: what is read is what was checked.
    use std::os::unix::fs::OpenOptionsExt;
    let file =
        File::options().read(true).custom_flags(libc::O_NONBLOCK).open(source).map_err(Error::io(what.clone()))?;
    if !file.metadata().map_err(Error::io(what.clone()))?.is_file() {
        return Err(not_regular());
    }
    let mut sink = HashingWriter::new(io::BufWriter::new(&mut *dest));
    // One byte past the cap, so a file that is too large is noticed rather than cut.
    std::io::copy(&mut file.take(max_bytes.saturating_add(1)), &mut sink)
        .map_err(Error::io(format!("copying {what} into the cache")))?;
    if sink.written() > max_bytes {
        return Err(Error::TooLarge { what, cap: max_bytes });
    }
    let (writer, sha256) = sink.finish();
    writer.into_inner().map_err(|e| Error::io("writing the copy in the cache")(e.into_error()))?;
    dest.sync_all().map_err(Error::io("syncing the copy in the cache"))?;
    Ok(sha256)
}

/// sha256 of bytes, in lowercase hex.
pub fn sha256_bytes(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Compares the hash of a fetched (and then deleted) copy with the expected one.
pub fn check(what: &str, expected: &str, actual: &str) -> Result<()> {
    let note = "The fetched copy was deleted; it is corrupt, truncated or not the pinned release. \
                Fetch it again, or check ONNXRT_MIRROR";
    check_with(what, expected, actual, note)
}

/// Compares a computed hash with the expected one; `note` goes into the mismatch message.
pub fn check_with(what: &str, expected: &str, actual: &str, note: &str) -> Result<()> {
    if expected.eq_ignore_ascii_case(actual) {
        Ok(())
    } else {
        Err(Error::HashMismatch {
            what: what.to_owned(),
            expected: expected.to_owned(),
            actual: actual.to_owned(),
            note: note.to_owned(),
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_hash_equals_one_shot_hash() {
        let data = vec![7u8; 200_000];
        let mut w = HashingWriter::new(Vec::new());
        for chunk in data.chunks(777) {
            w.write_all(chunk).expect("write to Vec");
        }
        assert_eq!(w.written(), 200_000);
        let (out, digest) = w.finish();
        assert_eq!(out, data);
        assert_eq!(digest, sha256_bytes(&data));
        // The well-known digest of the empty string.
        assert_eq!(sha256_bytes(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
