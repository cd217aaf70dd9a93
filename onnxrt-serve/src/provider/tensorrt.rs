//! TensorRT for a served model: the options its config gives (TensorRT's allow-list), and its
//! engine and timing caches in a folder of the model's version (`<cache root>/<model>/<version>/`)
//! that the server makes and owns: never shared between versions, so a new version never loads
//! engines built for another model file. `"engine_cache": false` turns both caches off: the
//! model then has no folder, and nothing under the root is looked at or written for it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Provider options as ORT's strings, in order.
pub type Options = Vec<(String, String)>;

/// A model's TensorRT settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorRtSetup {
    /// The CUDA device.
    pub device: i32,
    /// The config's `provider_options` (plain keys of onnxrt's TensorRT allow-list).
    pub options: Vec<(String, String)>,
    /// Whether built engines are cached (default on: building takes minutes for large models),
    /// and with them the layer timings (off: no cache folder for the model).
    pub engine_cache: bool,
    /// The folder every model's caches go under (`serve --engine-cache-root`).
    pub cache_root: PathBuf,
    /// `<cache_root>/<model>/<version>`, once [`TensorRtSetup::place`] made it.
    pub folder: Option<PathBuf>,
}

/// `$XDG_CACHE_HOME/onnxrt-serve/tensorrt`, else `~/.cache/onnxrt-serve/tensorrt`: a folder of
/// the user the server runs as (never a shared temporary folder: whoever can write an engine
/// there has it run on the GPU).
pub fn default_engine_cache_root() -> PathBuf {
    let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    let base = absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|home| home.join(".cache")));
    base.unwrap_or_else(|| PathBuf::from(".cache")).join("onnxrt-serve").join("tensorrt")
}

impl TensorRtSetup {
    /// Checks the model version's cache folder, `<cache root>/<model>/<version>`, before anything
    /// is made there: the root and every folder of it that exists must be writable by no other
    /// user (a cached engine is GPU code TensorRT runs), and none below the root may be a
    /// symbolic link. With `make` (TensorRT can be used), makes what is missing (mode 0700) and
    /// points the caches there. A refusal says which folder, why, and what to change. With the
    /// engine cache off the model has no folder: nothing is looked at or made.
    pub fn place(&mut self, model: &str, version: &str, make: bool) -> Result<(), String> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        if !self.engine_cache {
            self.folder = None;
            return Ok(());
        }
        let root = std::path::absolute(&self.cache_root).unwrap_or_else(|_| self.cache_root.clone());
        let folder = root.join(model).join(version);
        let refuse = |what: String| {
            format!(
                "the TensorRT cache folder {} {what}; give `serve --engine-cache-root` a folder only this server's \
                 user can write, or turn the engine cache off for this model (\"engine_cache\": false)",
                folder.display()
            )
        };
        // This process's user: the owner procfs gives its own entry (no unsafe in this crate).
        let me =
            std::fs::metadata("/proc/self").map_err(|e| refuse(format!("cannot be checked (/proc/self: {e})")))?.uid();
        let private = |dir: &Path, meta: &std::fs::Metadata| -> Result<(), String> {
            let mode = meta.mode() & 0o7777;
            if !meta.is_dir() {
                return Err(refuse(format!("cannot be made ({} is not a folder)", dir.display())));
            }
            if (meta.uid() != me && meta.uid() != 0) || mode & 0o022 != 0 {
                return Err(refuse(format!(
                    "is refused: {} belongs to uid {} with mode {mode:o}, another user could write there",
                    dir.display(),
                    meta.uid()
                )));
            }
            Ok(())
        };
        let mut missing = Vec::new();
        // The root may be a link the operator made; below it, links are refused.
        match std::fs::metadata(&root) {
            Ok(meta) => private(&root, &meta)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => missing.push(root.clone()),
            Err(e) => return Err(refuse(format!("cannot be made ({}: {e})", root.display()))),
        }
        let mut dir = root.clone();
        for part in [model, version] {
            dir = dir.join(part);
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(refuse(format!("is refused: {} is a symbolic link", dir.display())));
                }
                Ok(meta) if missing.is_empty() => private(&dir, &meta)?,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => missing.push(dir.clone()),
                Err(e) => return Err(refuse(format!("cannot be made ({}: {e})", dir.display()))),
            }
        }
        if !make {
            return Ok(());
        }
        let made = match missing.first() {
            Some(first) if *first == root => std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&folder),
            _ => missing.iter().try_for_each(|dir| std::fs::DirBuilder::new().mode(0o700).create(dir)),
        };
        made.map_err(|e| refuse(format!("cannot be made ({e})")))?;
        let probe = folder.join(".onnxrt-serve-write-check");
        std::fs::write(&probe, b"").map_err(|e| refuse(format!("cannot be written ({e})")))?;
        let _ = std::fs::remove_file(&probe);
        self.folder = Some(folder);
        Ok(())
    }

    /// Whether TensorRT can be used here (this build has the `tensorrt` feature and the runtime
    /// the provider): only then is a cache folder made.
    pub fn usable() -> bool {
        cfg!(feature = "tensorrt")
            && onnxrt::providers::available().is_ok_and(|have| have.iter().any(|p| p == "TensorrtExecutionProvider"))
    }

    /// The options TensorRT is given: the checked ones (the config's, the device, the timing
    /// cache) and the engine-cache keys, which onnxrt takes from safe code only through
    /// `TensorRtOptions::private_engine_cache` (a folder no other user can write: a cached engine
    /// is GPU code TensorRT runs unchecked).
    pub fn session_options(&self) -> (Options, Options) {
        let mut plain = self.options.clone();
        let set = |options: &mut Vec<(String, String)>, key: &str, value: String| {
            options.retain(|(k, _)| k != key);
            options.push((key.to_owned(), value));
        };
        set(&mut plain, "device_id", self.device.to_string());
        if !self.engine_cache {
            // No folder: TensorRT would write the timing cache in the working directory.
            set(&mut plain, "trt_timing_cache_enable", "0".into());
        }
        let mut vouched = Vec::new();
        if let (Some(folder), true) = (&self.folder, self.engine_cache) {
            let folder = folder.display().to_string();
            set(&mut plain, "trt_timing_cache_enable", "1".into());
            // Before ORT 1.17 the timing cache goes to the engine cache's folder: the same one.
            if runtime_takes("trt_timing_cache_path") {
                set(&mut plain, "trt_timing_cache_path", folder.clone());
            }
            set(&mut vouched, "trt_engine_cache_enable", "1".into());
            set(&mut vouched, "trt_engine_cache_path", folder);
        }
        (plain, vouched)
    }

    /// What the caches are, as the load error and the log say it.
    pub fn describe(&self) -> String {
        match (&self.folder, self.engine_cache) {
            (_, false) => " (engine cache and timing cache off)".to_owned(),
            (Some(folder), true) => format!(" (engine cache and timing cache in {})", folder.display()),
            (None, true) => " (no cache folder)".to_owned(),
        }
    }

    /// TensorRT with these settings, then CUDA on the same device for the nodes TensorRT does
    /// not take (as Triton's ONNX Runtime backend does).
    #[cfg(feature = "tensorrt")]
    pub(crate) fn apply(&self, builder: onnxrt::SessionBuilder) -> onnxrt::Result<onnxrt::SessionBuilder> {
        use onnxrt::allowed_keys::TENSORRT;
        let mut options = onnxrt::providers::tensorrt::TensorRtOptions::new();
        let (plain, vouched) = self.session_options();
        for (key, value) in &plain {
            // Checked against this table when the config was read; it holds the key for good.
            let Some(known) = TENSORRT.get(key) else {
                TENSORRT.check(key)?;
                continue;
            };
            options = options.raw(known.name, value);
        }
        if let (Some(folder), false) = (&self.folder, vouched.is_empty()) {
            options = options.private_engine_cache(folder)?;
        }
        let cuda = onnxrt::providers::cuda::CudaOptions::new().device_id(self.device);
        Ok(builder.tensorrt(options).cuda(cuda))
    }

    /// Without the `tensorrt` feature: what to build.
    #[cfg(not(feature = "tensorrt"))]
    pub(crate) fn apply(&self, _: onnxrt::SessionBuilder) -> Result<onnxrt::SessionBuilder, String> {
        Err(format!(
            "provider `tensorrt`{}: this server was built without the `tensorrt` feature: cargo build --release -p \
             onnxrt-serve --features tensorrt (and a GPU build of ONNX Runtime with TensorRT)",
            self.describe()
        ))
    }
}

/// Whether the loaded runtime reads TensorRT option `key` (onnxrt refuses, as `Unsupported`, a
/// key newer than the runtime). Without the `tensorrt` feature nothing is built: every key shows.
fn runtime_takes(key: &str) -> bool {
    #[cfg(feature = "tensorrt")]
    {
        let level = onnxrt::runtime_info().map_or(0, |runtime| runtime.api_level);
        let since = onnxrt::providers::tensorrt::OPTION_SINCE.iter().find(|(k, _)| *k == key);
        since.is_none_or(|(_, since)| level >= *since)
    }
    #[cfg(not(feature = "tensorrt"))]
    {
        let _ = key;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::TensorRtSetup;

    fn setup(root: &std::path::Path) -> TensorRtSetup {
        TensorRtSetup {
            device: 1,
            options: vec![("trt_fp16_enable".into(), "1".into())],
            engine_cache: true,
            cache_root: root.to_owned(),
            folder: None,
        }
    }

    #[test]
    fn each_model_version_gets_its_own_cache_folder() {
        let root = tempfile::tempdir().expect("temp dir");
        let mut v1 = setup(root.path());
        v1.place("resnet", "1", true).expect("made");
        let mut v2 = setup(root.path());
        v2.place("resnet", "2", true).expect("made");
        let folder = root.path().join("resnet/1");
        assert!(folder.is_dir());
        let (plain, vouched) = v1.session_options();
        let text = |list: &[(String, String)]| -> Vec<(String, String)> { list.to_vec() };
        let at = folder.display().to_string();
        let mut expected: Vec<(String, String)> = vec![
            ("trt_fp16_enable".into(), "1".into()),
            ("device_id".into(), "1".into()),
            ("trt_timing_cache_enable".into(), "1".into()),
        ];
        if super::runtime_takes("trt_timing_cache_path") {
            expected.push(("trt_timing_cache_path".into(), at.clone()));
        }
        assert_eq!(text(&plain), expected);
        assert_eq!(
            text(&vouched),
            [("trt_engine_cache_enable".into(), "1".into()), ("trt_engine_cache_path".into(), at)]
        );
        assert_ne!(v1.session_options(), v2.session_options(), "never shared between versions");
        // Every checked key is one TensorRT's allow-list lets through.
        onnxrt::allowed_keys::TENSORRT.check_all(plain.iter().map(|(k, _)| k.as_str())).expect("plain keys");
        let off = TensorRtSetup { engine_cache: false, ..v1 };
        assert!(off.session_options().1.is_empty(), "engine cache off: no engine keys");
    }

    /// With the engine cache off the model has no folder: a root that would be refused (a
    /// regular file, a folder others can write) is not looked at, nothing is made there, and
    /// TensorRT is told to keep no timing cache (it would write one in the working directory).
    #[test]
    fn with_the_engine_cache_off_the_root_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().expect("temp dir");
        let file = root.path().join("a-file");
        std::fs::write(&file, b"x").expect("write");
        let open = root.path().join("open");
        std::fs::create_dir(&open).expect("folder");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        for bad_root in [&file, &open] {
            let mut off = TensorRtSetup {
                engine_cache: false,
                options: vec![("trt_timing_cache_enable".into(), "1".into())],
                ..setup(bad_root)
            };
            assert_eq!(off.place("resnet", "1", true), Ok(()), "{}", bad_root.display());
            assert_eq!(off.folder, None);
            let (plain, vouched) = off.session_options();
            assert!(vouched.is_empty(), "{vouched:?}");
            assert!(plain.contains(&("trt_timing_cache_enable".into(), "0".into())), "{plain:?}");
            assert!(!plain.iter().any(|(k, _)| k == "trt_timing_cache_path"), "{plain:?}");
            assert_eq!(off.describe(), " (engine cache and timing cache off)");
        }
        assert_eq!(std::fs::read_dir(&open).expect("list").count(), 0, "nothing made under the root");
    }

    #[test]
    fn a_cache_folder_that_cannot_be_made_is_a_clear_error() {
        let root = tempfile::tempdir().expect("temp dir");
        let file = root.path().join("not-a-folder");
        std::fs::write(&file, b"x").expect("write");
        let error = setup(&file).place("resnet", "1", true).expect_err("under a file");
        assert!(error.contains("cannot be made") && error.contains("--engine-cache-root"), "{error}");
        assert!(error.contains(&file.join("resnet/1").display().to_string()), "{error}");
    }
}
