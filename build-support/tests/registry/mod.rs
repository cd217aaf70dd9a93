//! A registry-assembled distribution built in the test: an npm-style tarball holding the library
//! and a Debian package (`ar` of `debian-binary`, `control.tar.gz`, `data.tar.gz`) holding the
//! header, both pinned by sha256 in a one-entry manifest and placed in the cache's
//! `registry-files` folder, so that assembling needs no registry client.
#![allow(dead_code)] // each test file uses its own subset

use std::io::Write;
use std::path::Path;

use build_support::{Config, Manifest};

use crate::common::{sha256, HEADER_BYTES, LIB_BYTES, ROOT};

/// Name of the registry distribution of [`manifest`].
pub const REG_DIST: &str = "reg-test";
/// The npm tarball's file name.
pub const NPM_FILE: &str = "onnxruntime-node-9.9.9.tgz";
/// The Debian package's file name.
pub const DEB_FILE: &str = "libonnxruntime-dev_9.9.9_amd64.deb";
/// Where the library sits inside the npm tarball.
pub const NPM_MEMBER: &str = "package/bin/napi-v3/linux/x64/libonnxruntime.so.1.16.2";

/// A gzip'd tar of regular files (name, bytes), with fixed metadata.
pub fn tar_gz(files: &[(&str, &[u8])]) -> Vec<u8> {
    let gz = flate2::GzBuilder::new().mtime(0).write(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (name, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut header, name, *bytes).expect("appending to an in-memory tar");
    }
    builder.into_inner().expect("finishing the tar").finish().expect("finishing the gzip stream")
}

/// The npm tarball with the stand-in library.
pub fn npm_tarball() -> Vec<u8> {
    tar_gz(&[("package/package.json", b"{}\n"), (NPM_MEMBER, LIB_BYTES)])
}

/// An `ar` archive of `members`, as `dpkg-deb` reads it.
pub fn ar(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    for (name, bytes) in members {
        let header = format!("{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n", name, 0, 0, 0, 100644, bytes.len());
        assert_eq!(header.len(), 60, "ar header of {name}");
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(bytes);
        if bytes.len() % 2 == 1 {
            out.push(b'\n');
        }
    }
    out
}

/// A Debian package whose data holds `usr/include/onnxruntime/onnxruntime_c_api.h` = `header`.
pub fn deb(header: &[u8]) -> Vec<u8> {
    let control = b"Package: libonnxruntime-dev\nVersion: 9.9.9\nArchitecture: amd64\nMaintainer: test <t@t>\nDescription: test\n";
    let control_tar = tar_gz(&[("./control", control)]);
    let data_tar = tar_gz(&[("./usr/include/onnxruntime/onnxruntime_c_api.h", header)]);
    ar(&[("debian-binary", b"2.0\n"), ("control.tar.gz", &control_tar), ("data.tar.gz", &data_tar)])
}

/// The manifest of [`REG_DIST`], pinned to these two registry files.
pub fn manifest(npm: &[u8], deb: &[u8]) -> Manifest {
    Manifest::parse(&manifest_text(npm, deb)).expect("the registry test manifest parses")
}

/// The text of [`manifest`].
pub fn manifest_text(npm: &[u8], deb: &[u8]) -> String {
    format!(
        r#"schema = 1
default = "{REG_DIST}"

[[dist]]
name = "{REG_DIST}"
description = "assembled from registry files built by the test"
ort_version = "1.16.2"
api_version = 16
target = "x86_64-unknown-linux-gnu"
kind = "registry"
root = "{ROOT}"
library = "lib/libonnxruntime.so.1.16.2"
providers = []
headers = ["include/onnxruntime_c_api.h"]
[[dist.parts]]
registry = "npm"
package = "onnxruntime-node"
version = "9.9.9"
file = "{NPM_FILE}"
sha256 = "{}"
member = "{NPM_MEMBER}"
member_sha256 = "{}"
dest = "lib/libonnxruntime.so.1.16.2"
[[dist.parts]]
registry = "debian"
package = "libonnxruntime-dev"
version = "9.9.9"
suite = "trixie"
file = "{DEB_FILE}"
sha256 = "{}"
member = "usr/include/onnxruntime"
dest = "include"
"#,
        sha256(npm),
        sha256(LIB_BYTES),
        sha256(deb)
    )
}

/// A configuration that assembles [`REG_DIST`] in `cache` from the good registry files, which
/// are placed in its `registry-files` folder.
pub fn config(cache: &Path) -> Config {
    let (npm, deb) = (npm_tarball(), deb(HEADER_BYTES));
    let downloads = cache.join(build_support::assemble::DOWNLOADS);
    std::fs::create_dir_all(&downloads).expect("creating registry-files");
    for (name, bytes) in [(NPM_FILE, &npm), (DEB_FILE, &deb)] {
        let mut file = std::fs::File::create(downloads.join(name)).expect("writing a registry file");
        file.write_all(bytes).expect("writing a registry file");
    }
    Config::new(manifest(&npm, &deb), REG_DIST, cache.to_owned()).expect("a configuration for the registry dist")
}
