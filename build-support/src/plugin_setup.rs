//! What a user needs besides a plugin bundle's library for the plugin to load and offer a device:
//! for a bundle whose library needs the libraries beside it (the OpenVINO plugin), that folder on
//! `LD_LIBRARY_PATH` from the program's start (onnxrt loads the plugin from a sealed in-memory
//! copy, where its `$ORIGIN` runpath finds nothing); for a bundle that carries a Vulkan driver (the
//! WebGPU plugin's Mesa software driver), an ICD manifest naming that driver for the Vulkan loader
//! (`VK_ICD_FILENAMES`), and the WebGPU plugin's permission to use a software adapter where ORT's
//! device discovery lists no GPU. The manifest is written beside the cache entry, not inside it (a
//! file planted in an entry makes it damaged).

use std::path::{Path, PathBuf};

use crate::assemble::registry_key;
use crate::error::{Error, Result};
use crate::manifest::Dist;

/// Where a plugin bundle keeps its Vulkan driver.
pub const VULKAN_DRIVER: &str = "vulkan/libvulkan_lvp.so";

/// The Vulkan API version the ICD manifest declares (Mesa 25.0's lavapipe).
const VULKAN_API: &str = "1.4.305";

/// The environment a plugin bundle's library and device need, as `(variable, value)` pairs: empty
/// for a bundle whose library stands alone and that has no Vulkan driver. Writes the ICD manifest
/// `<cache>/<entry>.vulkan-icd.json` (replaced atomically when its content differs) naming the
/// driver in `root` (the bundle's folder inside the entry).
pub fn environment(cache_dir: &Path, dist: &Dist, root: &Path) -> Result<Vec<(&'static str, String)>> {
    if !dist.plugin {
        return Ok(Vec::new());
    }
    let mut environment = Vec::new();
    // Libraries pinned in the plugin library's own folder: what its `$ORIGIN` runpath would find.
    let folder = Path::new(&dist.library).parent().unwrap_or(Path::new(""));
    let beside = |path: &str| path != dist.library && Path::new(path).parent() == Some(folder) && path.contains(".so");
    if dist.files.iter().any(|f| beside(&f.path)) {
        environment.push(("LD_LIBRARY_PATH", path_text(&root.join(folder))));
    }
    if !dist.files.iter().any(|f| f.path == VULKAN_DRIVER) {
        return Ok(environment);
    }
    let driver = root.join(VULKAN_DRIVER);
    let name = format!("{}.vulkan-icd.json", registry_key(dist));
    let icd = cache_dir.join(&name);
    let text = icd_manifest(&driver);
    if std::fs::read_to_string(&icd).ok().as_deref() != Some(text.as_str()) {
        crate::replace_file(cache_dir, &name, text.as_bytes())
            .map_err(|e| Error::Manifest(format!("writing the Vulkan ICD manifest {}: {e}", icd.display())))?;
    }
    environment.extend([("VK_ICD_FILENAMES", path_text(&icd)), ("ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER", "1".into())]);
    Ok(environment)
}

/// The Vulkan loader's ICD manifest for the driver at `driver` (an absolute path).
fn icd_manifest(driver: &Path) -> String {
    let path = serde_json_string(&path_text(driver));
    format!("{{\"file_format_version\": \"1.0.0\", \"ICD\": {{\"library_path\": {path}, \"api_version\": \"{VULKAN_API}\"}}}}\n")
}

fn path_text(path: &Path) -> String {
    path.display().to_string()
}

/// `text` as a JSON string literal.
fn serde_json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The bundle's folder, from its library's path (`<root>/<dist.library>`).
pub fn bundle_root(dist: &Dist, library: &Path) -> PathBuf {
    let mut root = library.to_path_buf();
    for _ in Path::new(&dist.library).components() {
        root.pop();
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Manifest;

    #[test]
    fn the_webgpu_bundle_gets_an_icd_manifest_and_the_two_variables() {
        let manifest = Manifest::builtin().expect("manifest");
        let dist = manifest.dists.iter().find(|d| d.plugin && d.name.starts_with("webgpu-plugin-")).expect("bundle");
        let cache = tempfile::tempdir().expect("cache");
        let root = cache.path().join("entry").join(&dist.root);
        assert_eq!(bundle_root(dist, &root.join(&dist.library)), root);
        let env = environment(cache.path(), dist, &root).expect("written");
        let icd = PathBuf::from(&env.iter().find(|(k, _)| *k == "VK_ICD_FILENAMES").expect("icd").1);
        assert!(icd.starts_with(cache.path()) && !icd.starts_with(&root), "beside the entry, not in it: {icd:?}");
        let text = std::fs::read_to_string(&icd).expect("icd manifest");
        assert!(text.contains(&format!("\"library_path\": \"{}\"", root.join(VULKAN_DRIVER).display())), "{text}");
        assert!(env.contains(&("ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER", "1".into())));
        // Again: the same file, the same content.
        assert_eq!(environment(cache.path(), dist, &root).expect("again"), env);
        assert!(!env.iter().any(|(k, _)| *k == "LD_LIBRARY_PATH"), "its library stands alone: {env:?}");
        // A runtime has none.
        let runtime = manifest.dist("cpu-1.16.2-registry").expect("runtime");
        assert!(environment(cache.path(), runtime, &root).expect("none").is_empty());
    }

    #[test]
    fn the_openvino_bundle_needs_its_lib_folder_on_the_library_path() {
        let manifest = Manifest::builtin().expect("manifest");
        let dist = manifest.dist("openvino-plugin-1.8.1-registry").expect("bundle");
        let cache = tempfile::tempdir().expect("cache");
        let root = cache.path().join("entry").join(&dist.root);
        let env = environment(cache.path(), dist, &root).expect("environment");
        assert_eq!(env, vec![("LD_LIBRARY_PATH", root.join("lib").display().to_string())]);
        // The libraries its library needs are pinned beside it; the GPU and NPU plugins are not.
        for needed in ["lib/libopenvino.so.2641", "lib/libopenvino_onnx_frontend.so.2641", "lib/libtbb.so.12"] {
            assert!(dist.files.iter().any(|f| f.path == needed), "{needed}");
        }
        assert!(!dist.files.iter().any(|f| f.path.contains("gpu") || f.path.contains("npu")));
    }
}
