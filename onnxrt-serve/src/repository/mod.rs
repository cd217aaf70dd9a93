//! A model repository: a folder of models, each served under its folder's name.
//!
//! ```text
//! models/
//!   resnet50/model.onnx            # served as `resnet50`, version 1
//!   resnet50/config.json           # optional: batching, provider, warm-up shapes… (ModelConfig)
//!   ppocr_det/3/model.onnx         # Triton's layout: the highest numbered folder, version 3
//! ```
//! Every model is loaded and warmed up at start. One that cannot be loaded or warmed up is kept,
//! not ready, with the reason (the repository index lists it; requests for it are answered 503
//! naming the reason) while the others serve; [`Repository::load`] with `strict` (and
//! `serve --strict-start`) makes the first such model an error instead. Models are loaded,
//! reloaded and unloaded while serving by the model-control modes (`control.rs`).

pub mod config;
mod control;
mod errors;
pub mod model;
mod runner;
mod sessions;
pub mod stats;
mod tensor;
mod warm_up;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

pub use config::{Defaults, ModelConfig, Settings};
pub use control::{ControlError, ControlMode};
pub use model::{InferError, ModelTensor, ServedModel, WarmedUp};

/// The models a server serves, by name. A request takes its model's `Arc` and lets the lock go,
/// so a reload swaps in a new model while requests in flight finish on the old one.
#[derive(Debug, Default)]
pub struct Repository {
    served: RwLock<Served>,
    /// Where the models come from and how they may change (none for `--model` and the embedded one).
    source: Option<control::Source>,
}

/// What the repository serves now.
#[derive(Debug, Default)]
struct Served {
    models: BTreeMap<String, Arc<ServedModel>>,
    /// Models of the repository that could not be loaded, or were unloaded, by name.
    unavailable: BTreeMap<String, Unavailable>,
}

/// A model of the repository that could not be loaded: listed, never served.
#[derive(Debug, Clone)]
pub struct Unavailable {
    /// Its version (the folder's number, or `1`).
    pub version: String,
    /// Why it could not be loaded.
    pub error: LoadError,
    /// Whether it was never loaded or unloaded on request (explicit model control).
    pub unloaded: bool,
}

impl Unavailable {
    /// A model of the repository not loaded (on request, or not named at start).
    fn unloaded() -> Unavailable {
        let why = "unloaded".into();
        Unavailable { version: String::new(), error: LoadError { path: PathBuf::new(), why }, unloaded: true }
    }
}

/// Why a request names no model that serves.
#[derive(Debug, Clone)]
pub enum FindError {
    /// No model or version of that name (404).
    Unknown(String),
    /// The model is in the repository but not served: it could not be loaded, or its warm-up
    /// failed (503), with the reason.
    Unavailable(String),
}

impl std::fmt::Display for FindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FindError::Unknown(why) | FindError::Unavailable(why) => f.write_str(why),
        }
    }
}

/// One line of the repository index.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    /// The model's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Whether it serves now.
    pub ready: bool,
    /// Why it does not (empty when it does).
    pub reason: String,
}

/// A model of a repository that could not be loaded.
#[derive(Debug, Clone, thiserror::Error)]
#[error("model repository: {path}: {why}")]
pub struct LoadError {
    /// The folder or file at fault.
    pub path: PathBuf,
    /// What is wrong, and what to do.
    pub why: String,
}

/// A model's name and what its warm-up did (or why it failed).
pub type WarmUpOutcome = (String, Result<WarmedUp, String>);

/// A folder of the repository: its model, or its name and what is wrong with it.
type Scanned = Result<Found, (String, LoadError)>;

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
    /// config files do not say. Does not warm them up ([`Repository::warm_up`]). A model that
    /// cannot be loaded is listed as unavailable, with the reason, unless `strict`: then it is
    /// the error.
    pub fn load(root: &Path, defaults: &Defaults, strict: bool) -> Result<Repository, LoadError> {
        Repository::open(root, defaults, strict, ControlMode::None, &[])
    }

    /// As [`Repository::load`], under model-control `mode`: with [`ControlMode::Explicit`] only
    /// the models named in `initial` are loaded (`*`: all), the others are listed as unloaded.
    pub fn open(
        root: &Path,
        defaults: &Defaults,
        strict: bool,
        mode: ControlMode,
        initial: &[String],
    ) -> Result<Repository, LoadError> {
        let mut repository =
            Repository { source: Some(control::Source::new(root, defaults, mode)), ..Repository::default() };
        let scanned = scan(root)?;
        // A model to load at start that has no folder is a mistake to fix, as Triton refuses it.
        let name_of = |found: &Scanned| found.as_ref().map_or_else(|(name, _)| name.clone(), |f| f.name.clone());
        let names: Vec<String> = scanned.iter().map(name_of).collect();
        if let Some(missing) = initial.iter().find(|n| *n != "*" && !names.contains(n)) {
            return Err(LoadError {
                path: root.join(missing),
                why: format!("--load-model {missing}: no such model folder in the repository (it has {names:?})"),
            });
        }
        for found in scanned {
            let name = name_of(&found);
            if mode == ControlMode::Explicit && !initial.iter().any(|n| *n == name || n == "*") {
                repository.served_mut().unavailable.insert(name, Unavailable::unloaded());
                continue;
            }
            if let (Ok(found), Some(source)) = (&found, &repository.source) {
                source.record(found);
            }
            let found = match found {
                Ok(found) => found,
                Err((_, error)) if strict => return Err(error),
                Err((name, error)) => {
                    tracing::error!(model = %name, cause = %error, "model not loaded: it is listed as unavailable and not served (--strict-start makes this an error)");
                    repository
                        .served_mut()
                        .unavailable
                        .insert(name, Unavailable { version: "1".into(), error, unloaded: false });
                    continue;
                }
            };
            let config_path = found.folder.join("config.json");
            let refuse = |why: String| LoadError { path: found.folder.clone(), why };
            let added = ModelConfig::read(&config_path).map_err(refuse).and_then(|config| {
                repository.add_file(&found.name, &found.version, &found.file, &found.folder, config, defaults)
            });
            match added {
                Ok(()) => {}
                Err(error) if strict => return Err(error),
                Err(error) => {
                    tracing::error!(model = %found.name, cause = %error, "model not loaded: it is listed as unavailable and not served (--strict-start makes this an error)");
                    repository
                        .served_mut()
                        .unavailable
                        .insert(found.name.clone(), Unavailable { version: found.version, error, unloaded: false });
                }
            }
        }
        let served = repository.served_mut();
        if served.models.is_empty() && served.unavailable.is_empty() {
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
        self.served_mut().models.insert(name.to_owned(), Arc::new(model));
        Ok(())
    }

    fn served_mut(&mut self) -> &mut Served {
        self.served.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn served(&self) -> std::sync::RwLockReadGuard<'_, Served> {
        self.served.read().unwrap_or_else(std::sync::PoisonError::into_inner)
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
        if self.served_mut().models.contains_key(name) {
            return Err(LoadError { path: file.to_owned(), why: format!("a second model named `{name}`") });
        }
        let model = build(name, version, file, bytes, folder, config, defaults)?;
        self.served_mut().models.insert(name.to_owned(), Arc::new(model));
        Ok(())
    }

    /// Warms every model up (see [`ServedModel::warm_up`]). A model whose warm-up fails stays
    /// not ready, with the reason, unless `strict`: then the first failure is returned, naming
    /// the model.
    pub fn warm_up(&self, strict: bool) -> Result<Vec<WarmUpOutcome>, LoadError> {
        let models = self.models();
        let mut outcomes = Vec::with_capacity(models.len());
        for model in &models {
            let outcome = model.warm_up();
            if let (true, Err(why)) = (strict, &outcome) {
                return Err(LoadError { path: model.path.clone(), why: format!("model `{}`: {why}", model.name) });
            }
            outcomes.push((model.name.clone(), outcome));
        }
        Ok(outcomes)
    }

    /// The model named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<ServedModel>> {
        self.served().models.get(name).cloned()
    }

    /// The model named `name` (of `version`, when one is given and not empty), or why there is
    /// none: a message naming the models there are, or the version there is.
    /// A model that could not be loaded, or whose warm-up failed, is [`FindError::Unavailable`].
    pub fn find(&self, name: &str, version: Option<&str>) -> Result<Arc<ServedModel>, FindError> {
        let served = self.served();
        let wrong_version = |has: &str| match version {
            Some(version) if !version.is_empty() && version != has => {
                Some(FindError::Unknown(format!("model `{name}` has no version `{version}`; it has version `{has}`")))
            }
            _ => None,
        };
        let Some(model) = served.models.get(name) else {
            if let Some(unavailable) = served.unavailable.get(name) {
                if unavailable.unloaded {
                    return Err(FindError::Unavailable(format!(
                        "model `{name}` is not loaded: POST /v2/repository/models/{name}/load loads it"
                    )));
                }
                return Err(wrong_version(&unavailable.version).unwrap_or_else(|| {
                    FindError::Unavailable(format!("model `{name}` is not available: {}", unavailable.error))
                }));
            }
            let known: Vec<&str> = served.models.keys().chain(served.unavailable.keys()).map(String::as_str).collect();
            return Err(FindError::Unknown(format!("no model `{name}`; this server has {known:?}")));
        };
        if let Some(error) = wrong_version(&model.version) {
            return Err(error);
        }
        if model.failed() {
            return Err(FindError::Unavailable(format!("model `{name}` is not available: {}", model.reason())));
        }
        Ok(Arc::clone(model))
    }

    /// Every model of the repository, served or not, by name: the repository index. Explicit
    /// mode reads the folder again: a folder added since is listed unloaded, one removed since
    /// is no longer listed unless its model serves.
    pub fn index(&self) -> Vec<IndexEntry> {
        let folders =
            self.source.as_ref().filter(|s| s.mode() == ControlMode::Explicit).map(|s| folder_names(s.root()));
        let served = self.served();
        let present = |name: &str| folders.as_ref().is_none_or(|f| f.iter().any(|n| n == name));
        let unloaded = Unavailable::unloaded();
        let added = folders
            .iter()
            .flatten()
            .filter(|n| !served.models.contains_key(*n) && !served.unavailable.contains_key(*n));
        let unavailable = served.unavailable.iter().chain(added.map(|n| (n, &unloaded)));
        let unavailable = unavailable.filter(|(name, _)| !served.models.contains_key(*name) && present(name));
        let unavailable = unavailable.map(|(name, u)| IndexEntry {
            name: name.clone(),
            version: u.version.clone(),
            ready: false,
            reason: if u.unloaded { "unloaded".into() } else { u.error.to_string() },
        });
        let loaded = served.models.values().map(|m| IndexEntry {
            name: m.name.clone(),
            version: m.version.clone(),
            ready: m.is_ready(),
            reason: m.reason(),
        });
        let mut entries: Vec<IndexEntry> = loaded.chain(unavailable).collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        entries
    }

    /// Every model served now, by name.
    pub fn models(&self) -> Vec<Arc<ServedModel>> {
        self.served().models.values().cloned().collect()
    }

    /// Whether every model that loaded is ready or marked failed (the server has finished
    /// starting; the index says which models serve).
    pub fn is_ready(&self) -> bool {
        self.served().models.values().all(|m| m.is_ready() || m.failed())
    }

    /// Drains and stops every batcher.
    pub fn shutdown(&self) {
        self.models().iter().for_each(|m| m.shutdown());
    }
}

/// A model built from its file (labels and config paths relative to `folder`), not warmed up.
fn build(
    name: &str,
    version: &str,
    file: &Path,
    bytes: Option<&'static [u8]>,
    folder: &Path,
    config: ModelConfig,
    defaults: &Defaults,
) -> Result<ServedModel, LoadError> {
    let refuse = |why: String| LoadError { path: file.to_owned(), why };
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
    ServedModel::load(name, version, file, bytes, config, settings, labels).map_err(refuse)
}

/// The models under `root`, sorted by name; a folder that holds none, or has a name the
/// protocol's paths cannot carry, is its name and what is wrong.
fn scan(root: &Path) -> Result<Vec<Scanned>, LoadError> {
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
        found.push(scan_folder(name, folder));
    }
    found.sort_by(|a, b| {
        let name = |f: &Scanned| match f {
            Ok(found) => found.name.clone(),
            Err((name, _)) => name.clone(),
        };
        name(a).cmp(&name(b))
    });
    Ok(found)
}

/// The names of the folders under `root` a scan would look into.
fn folder_names(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect()
}

/// Whether `name` may name a model folder (the protocol's paths carry it as it is).
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

/// Why a folder's name cannot name a model.
const NAME_RULE: &str = "a model's folder name may hold ASCII letters, digits, `_`, `-` and `.` only";

/// The model of one folder of the repository (its highest numbered version), or what is wrong.
fn scan_folder(name: String, folder: PathBuf) -> Scanned {
    let refuse = |path: &Path, why: String| LoadError { path: path.to_owned(), why };
    if !valid_name(&name) {
        return Err((name, refuse(&folder, NAME_RULE.into())));
    }
    let direct = folder.join("model.onnx");
    if direct.is_file() {
        return Ok(Found { name, version: "1".to_owned(), folder, file: direct });
    }
    let versions = match std::fs::read_dir(&folder) {
        Ok(versions) => versions,
        Err(error) => return Err((name, refuse(&folder, error.to_string()))),
    };
    let newest = versions
        .filter_map(Result::ok)
        .filter_map(|v| v.file_name().to_str().and_then(|n| n.parse::<u64>().ok()).map(|n| (n, v.path())))
        .filter(|(_, path)| path.join("model.onnx").is_file())
        .max_by_key(|(n, _)| *n);
    match newest {
        Some((n, path)) => Ok(Found { name, version: n.to_string(), folder, file: path.join("model.onnx") }),
        None => {
            let why = "has no model.onnx (nor a numbered version folder holding one): put the model at \
                       NAME/model.onnx, or remove the folder"
                .into();
            Err((name, refuse(&folder, why)))
        }
    }
}
