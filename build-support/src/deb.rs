//! The data of a Debian package, read in-process from bytes already hashed: a `.deb` is an `ar`
//! archive of `debian-binary`, `control.tar.*` and `data.tar.*`; this returns the data tar,
//! decompressed (xz, gzip or none), within a bound. No `dpkg-deb` is run, so no program found
//! through `PATH` can supply the files, and the package is never opened again by path.
#![forbid(unsafe_code)]

use std::io::{self, BufReader, Read, Write};

use crate::error::{Error, Result};

/// Most bytes the data tar of a package may expand to (a headers package holds a few hundred KiB).
pub const DATA_CAP: u64 = 256 << 20;

const MAGIC: &[u8; 8] = b"!<arch>\n";

/// The decompressed `data.tar` of the package `reader` (named `what` in errors).
pub fn data_tar(mut reader: impl Read, what: &str) -> Result<Vec<u8>> {
    let corrupt = |why: String| Error::Corrupt { what: what.to_owned(), why };
    let mut magic = [0u8; 8];
    reader.read_exact(&mut magic).map_err(|e| corrupt(format!("not a Debian package: {e}")))?;
    if &magic != MAGIC {
        return Err(corrupt("not a Debian package (no `ar` signature)".into()));
    }
    loop {
        let mut header = [0u8; 60];
        match reader.read_exact(&mut header) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(corrupt("the package has no data.tar member".into()))
            }
            Err(e) => return Err(corrupt(e.to_string())),
        }
        if &header[58..60] != b"`\n" {
            return Err(corrupt("damaged `ar` member header".into()));
        }
        let name = String::from_utf8_lossy(&header[..16]).trim_end().trim_end_matches('/').to_owned();
        let size: u64 = String::from_utf8_lossy(&header[48..58])
            .trim()
            .parse()
            .map_err(|_| corrupt(format!("member `{name}` has no readable size")))?;
        // Members start on even offsets: an odd-sized one is followed by one padding byte.
        let padded = size + size % 2;
        if let Some(compression) = name.strip_prefix("data.tar") {
            let mut member = (&mut reader).take(size);
            return decompress(&mut member, compression, what);
        }
        let skipped = io::copy(&mut (&mut reader).take(padded), &mut io::sink()).map_err(|e| corrupt(e.to_string()))?;
        if skipped != padded {
            return Err(corrupt(format!("member `{name}` is cut short")));
        }
    }
}

fn decompress(member: &mut impl Read, compression: &str, what: &str) -> Result<Vec<u8>> {
    let corrupt = |why: String| Error::Corrupt { what: format!("data.tar{compression} of {what}"), why };
    let mut out = Capped { bytes: Vec::new(), cap: DATA_CAP };
    match compression {
        ".xz" => lzma_rs::xz_decompress(&mut BufReader::new(member), &mut out).map_err(|e| corrupt(e.to_string()))?,
        ".gz" => {
            io::copy(&mut flate2::read::GzDecoder::new(member), &mut out).map_err(|e| corrupt(e.to_string()))?;
        }
        "" => {
            io::copy(member, &mut out).map_err(|e| corrupt(e.to_string()))?;
        }
        other => {
            return Err(corrupt(format!(
                "`data.tar{other}` compression is not read here (xz, gzip or none are); use a package built with xz"
            )))
        }
    }
    Ok(out.bytes)
}

/// A `Vec` that refuses to grow past `cap` (a decompression bomb fails instead of filling memory).
struct Capped {
    bytes: Vec<u8>,
    cap: u64,
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len() as u64 + buf.len() as u64 > self.cap {
            return Err(io::Error::other(format!("the package's data expands past {} MiB", self.cap >> 20)));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ar(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        for (name, bytes) in members {
            out.extend_from_slice(
                format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n", 0, 0, 0, 100644, bytes.len()).as_bytes(),
            );
            out.extend_from_slice(bytes);
            if bytes.len() % 2 == 1 {
                out.push(b'\n');
            }
        }
        out
    }

    #[test]
    fn the_data_member_is_found_past_odd_sized_members_and_others_are_refused() {
        let deb = ar(&[("debian-binary", b"2.0\n"), ("control.tar", b"odd"), ("data.tar", b"the data")]);
        assert_eq!(data_tar(deb.as_slice(), "x.deb").expect("plain data.tar"), b"the data");
        let no_data = ar(&[("debian-binary", b"2.0\n")]);
        assert!(data_tar(no_data.as_slice(), "x.deb").is_err());
        assert!(data_tar(&b"PK\x03\x04 not an ar"[..], "x.deb").is_err());
        let zstd = ar(&[("data.tar.zst", b"....")]);
        assert!(data_tar(zstd.as_slice(), "x.deb").expect_err("zstd").to_string().contains("xz"));
    }

    #[test]
    fn the_debian_package_of_the_registry_dist_is_read_when_cached() {
        // The real package when this machine has it (CI's cache does); its header must be there.
        let Some(home) = std::env::var_os("HOME") else { return };
        let cache = std::env::var_os("ONNXRT_CACHE_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::Path::new(&home).join(".cache/onnxrt"));
        let path = cache.join("registry-files/libonnxruntime-dev_1.21.0+dfsg-1_amd64.deb");
        let Ok(file) = std::fs::File::open(&path) else { return };
        let data = data_tar(BufReader::new(file), "libonnxruntime-dev").expect("the real .deb reads");
        let mut archive = tar::Archive::new(data.as_slice());
        let names: Vec<String> = archive
            .entries()
            .expect("tar")
            .map(|e| e.expect("entry").path().expect("path").display().to_string())
            .collect();
        assert!(names.iter().any(|n| n.ends_with("usr/include/onnxruntime/onnxruntime_c_api.h")), "{names:?}");
    }
}
