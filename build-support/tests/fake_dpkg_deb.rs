//! A `dpkg-deb` earlier in `PATH` used to supply the headers of a registry-assembled
//! distribution: the `.deb` is now read in-process from the bytes that were
//! hashed, so no program found through `PATH` takes part in extracting it. One test in this file:
//! it changes `PATH` for the whole process.

mod common;
mod registry;

use std::os::unix::fs::PermissionsExt;

use build_support::provision;
use common::*;

#[test]
fn a_fake_dpkg_deb_in_path_supplies_nothing() {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = registry::config(&cache);
    // The fake prints a data tar with a planted header, whatever it is asked.
    let planted = tmp.path().join("planted.tar");
    let mut tar = tar::Builder::new(Vec::new());
    let body: &[u8] = b"/* planted by a fake dpkg-deb */\n";
    let mut header = tar::Header::new_gnu();
    header.set_size(body.len() as u64);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    tar.append_data(&mut header, "./usr/include/onnxruntime/onnxruntime_c_api.h", body).expect("tar");
    std::fs::write(&planted, tar.into_inner().expect("tar")).expect("writing the planted tar");
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    let fake = bin.join("dpkg-deb");
    std::fs::write(&fake, format!("#!/bin/sh\nexec cat {}\n", planted.display())).expect("writing the fake");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::set_var("PATH", format!("{}:{path}", bin.display()));
    let result = provision(&config);
    std::env::set_var("PATH", path);
    let p = result.expect("the registry dist assembles");
    let header = std::fs::read(p.include_dir.join("onnxruntime_c_api.h")).expect("reading the installed header");
    assert_eq!(String::from_utf8_lossy(&header), String::from_utf8_lossy(HEADER_BYTES), "the installed header");
}
