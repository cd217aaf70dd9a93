//! A model repository: a folder of models, each served under its folder's name.
//!
//! ```text
//! models/
//!   resnet50/model.onnx            # served as `resnet50`, version 1
//!   resnet50/config.json           # optional: batching, provider, warm-up shapes… (ModelConfig)
//!   ppocr_det/3/model.onnx         # Triton's layout: the highest numbered folder, version 3
//! ```
//! Every model is loaded and warmed up at start; one that cannot be is an error naming its folder
//! (a server that starts without a model it was given would answer 404s for it instead).

pub mod config;
pub mod model;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use config::{Defaults, ModelConfig, Settings};
pub use model::{InferError, ModelTensor, ServedModel};

/// The models a server serves, by name.
#[derive(Debug, Default)]
pub struct Repository {
    models: BTreeMap<String, Arc<ServedModel>>,
}

/// A model of a repository that could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("model repository: {path}: {why}")]
pub struct LoadError {
    /// The folder or file at fault.
    pub path: PathBuf,
    /// What is wrong, and what to do.
    pub why: String,
}

/// Where one model of a repository folder is.
#[derive(Debug)]
struct Found {
    name: String,
    version: String,
    folder: PathBuf,
    file: PathBuf,
}

impl Repository {
    /// Loads every model under `root` (see the module docs) with `defaults` for what their
    /// config files do not say. Does not warm them up ([`Repository::warm_up`]).
    pub fn load(root: &Path, defaults: &Defaults) -> Result<Repository, LoadError> {
        let mut repository = Repository::default();
        for found in scan(root)? {
            let config_path = found.folder.join("config.json");
            let refuse = |why: String| LoadError { path: found.folder.clone(), why };
            let config = ModelConfig::read(&config_path).map_err(refuse)?;
            repository.add_file(&found.name, &found.version, &found.file, &found.folder, config, defaults)?;
        }
        if repository.models.is_empty() {
            return Err(LoadError {
                path: root.to_owned(),
                why: "holds no model: put each model in a folder of its own, as NAME/model.onnx".into(),
            });
        }
        Ok(repository)
    }

    /// Adds the model in `file` as `name` (its labels and config paths relative to `folder`).
    pub fn add_file(
        &mut self,
        name: &str,
        version: &str,
        file: &Path,
        folder: &Path,
        config: ModelConfig,
        defaults: &Defaults,
    ) -> Result<(), LoadError> {
        self.add(name, version, file, None, folder, config, defaults)
    }

    /// Adds a model held in memory (the embedded one) as `name`.
    pub fn add_bytes(
        &mut self,
        name: &str,
        bytes: &'static [u8],
        config: ModelConfig,
        defaults: &Defaults,
        labels: Vec<String>,
    ) -> Result<(), LoadError> {
        let refuse = |why: String| LoadError { path: PathBuf::from(format!("(embedded model `{name}`)")), why };
        let settings = Settings::of(&config, defaults).map_err(refuse)?;
        let model =
            ServedModel::load(name, "1", Path::new(name), Some(bytes), config, settings, labels).map_err(refuse)?;
        self.models.insert(name.to_owned(), Arc::new(model));
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        name: &str,
        version: &str,
        file: &Path,
        bytes: Option<&'static [u8]>,
        folder: &Path,
        config: ModelConfig,
        defaults: &Defaults,
    ) -> Result<(), LoadError> {
        let refuse = |why: String| LoadError { path: file.to_owned(), why };
        if self.models.contains_key(name) {
            return Err(refuse(format!("a second model named `{name}`")));
        }
        let settings = Settings::of(&config, defaults).map_err(refuse)?;
        let labels = match &config.labels {
            Some(labels) => {
                let path = folder.join(labels);
                std::fs::read_to_string(&path)
                    .map_err(|e| LoadError { path: path.clone(), why: format!("the labels file: {e}") })?
                    .lines()
                    .map(str::to_owned)
                    .collect()
            }
            None => Vec::new(),
        };
        let model = ServedModel::load(name, version, file, bytes, config, settings, labels).map_err(refuse)?;
        self.models.insert(name.to_owned(), Arc::new(model));
        Ok(())
    }

    /// Warms every model up (one run each; see [`ServedModel::warm_up`]); the first failure is
    /// returned, naming the model.
    pub fn warm_up(&self) -> Result<Vec<(String, std::time::Duration)>, LoadError> {
        let mut took = Vec::with_capacity(self.models.len());
        for model in self.models.values() {
            let elapsed = model
                .warm_up()
                .map_err(|why| LoadError { path: model.path.clone(), why: format!("model `{}`: {why}", model.name) })?;
            took.push((model.name.clone(), elapsed));
        }
        Ok(took)
    }

    /// The model named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<ServedModel>> {
        self.models.get(name)
    }

    /// The model named `name` (of `version`, when one is given and not empty), or why there is
    /// none: a message naming the models there are, or the version there is.
    pub fn find(&self, name: &str, version: Option<&str>) -> Result<&Arc<ServedModel>, String> {
        let Some(model) = self.models.get(name) else {
            let known: Vec<&str> = self.models.keys().map(String::as_str).collect();
            return Err(format!("no model `{name}`; this server has {known:?}"));
        };
        match version {
            Some(version) if !version.is_empty() && version != model.version => {
                Err(format!("model `{name}` has no version `{version}`; it has version `{}`", model.version))
            }
            _ => Ok(model),
        }
    }

    /// Every model, by name.
    pub fn models(&self) -> impl Iterator<Item = &Arc<ServedModel>> {
        self.models.values()
    }

    /// Whether every model is ready.
    pub fn is_ready(&self) -> bool {
        self.models.values().all(|m| m.is_ready())
    }

    /// Drains and stops every batcher.
    pub fn shutdown(&self) {
        self.models.values().for_each(|m| m.shutdown());
    }
}

/// The models under `root`, sorted by name.
fn scan(root: &Path) -> Result<Vec<Found>, LoadError> {
    let refuse = |path: &Path, why: String| LoadError { path: path.to_owned(), why };
    let entries = std::fs::read_dir(root).map_err(|e| refuse(root, e.to_string()))?;
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| refuse(root, e.to_string()))?;
        let folder = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !folder.is_dir() {
            continue;
        }
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) {
            return Err(refuse(
                &folder,
                "a model's folder name may hold letters, digits, `_`, `-` and `.` only".into(),
            ));
        }
        let direct = folder.join("model.onnx");
        let (version, file) = if direct.is_file() {
            ("1".to_owned(), direct)
        } else {
            let versions = std::fs::read_dir(&folder).map_err(|e| refuse(&folder, e.to_string()))?;
            let newest = versions
                .filter_map(Result::ok)
                .filter_map(|v| v.file_name().to_str().and_then(|n| n.parse::<u64>().ok()).map(|n| (n, v.path())))
                .filter(|(_, path)| path.join("model.onnx").is_file())
                .max_by_key(|(n, _)| *n);
            match newest {
                Some((n, path)) => (n.to_string(), path.join("model.onnx")),
                None => {
                    return Err(refuse(
                        &folder,
                        "has no model.onnx (nor a numbered version folder holding one): put the model at \
                         NAME/model.onnx, or remove the folder"
                            .into(),
                    ))
                }
            }
        };
        found.push(Found { name, version, folder, file });
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}
