//! Model control, as Triton's model-repository extension names it: `none` (the models of the
//! folder at start, no changes), `explicit` (load and unload on request) and `poll` (the folder
//! scanned again now and then: new or changed models loaded, removed ones unloaded).
//!
//! A load builds and warms up the new model first and only then swaps it in under the write
//! lock; requests that already hold the old model's `Arc` finish on it, and it is dropped (its
//! batcher drained) when the last of them ends. A load that fails leaves a model that serves
//! serving, and lists one that does not as unavailable with the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use super::{
    build, scan, scan_folder, valid_name, Defaults, Found, LoadError, ModelConfig, Repository, Unavailable, NAME_RULE,
};

/// How the models of a repository may change while serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ControlMode {
    /// Every model at start; load and unload requests are refused.
    #[default]
    None,
    /// The folder is scanned again by [`Repository::poll`]; load and unload requests are refused.
    Poll,
    /// Models are loaded and unloaded on request.
    Explicit,
}

/// Why a load or unload request was not done.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ControlError {
    /// The mode does not take such requests (400, as Triton answers).
    #[error("{0}")]
    NotAllowed(String),
    /// No model folder of that name (404).
    #[error("{0}")]
    Unknown(String),
    /// The model could not be loaded or warmed up (400, as Triton answers), with the reason.
    #[error("{0}")]
    Failed(String),
}

/// What a model's files were when it was last loaded: a change means a reload when polling.
type Stamp = (String, Option<SystemTime>, Option<SystemTime>);

/// Where a repository's models come from.
#[derive(Debug)]
pub(super) struct Source {
    root: PathBuf,
    defaults: Defaults,
    mode: ControlMode,
    stamps: Mutex<BTreeMap<String, Stamp>>,
    /// One load or unload at a time (requests are not held by it).
    changing: Mutex<()>,
}

impl Source {
    pub(super) fn new(root: &Path, defaults: &Defaults, mode: ControlMode) -> Source {
        Source {
            root: root.to_owned(),
            defaults: defaults.clone(),
            mode,
            stamps: Mutex::default(),
            changing: Mutex::default(),
        }
    }

    pub(super) fn mode(&self) -> ControlMode {
        self.mode
    }

    pub(super) fn root(&self) -> &Path {
        &self.root
    }

    /// Remembers the files of `found` as loaded.
    pub(super) fn record(&self, found: &Found) {
        self.stamps.lock().unwrap_or_else(PoisonError::into_inner).insert(found.name.clone(), stamp_of(found));
    }
}

fn stamp_of(found: &Found) -> Stamp {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    (found.version.clone(), modified(&found.file), modified(&found.folder.join("config.json")))
}

impl Repository {
    /// The model-control mode (`None` for a single model or the embedded one).
    pub fn control_mode(&self) -> ControlMode {
        self.source.as_ref().map_or(ControlMode::None, |s| s.mode)
    }

    /// Loads the model of folder `name` (its highest version), or loads it again: the new one
    /// is built and warmed up before it replaces the one serving. Explicit mode only.
    pub fn load_model(&self, name: &str) -> Result<(), ControlError> {
        let source = self.explicit_source("load")?;
        let _changing = source.changing.lock().unwrap_or_else(PoisonError::into_inner);
        self.reload(source, name)
    }

    /// Stops serving model `name` (requests in flight finish); it stays listed, `unloaded`.
    /// Explicit mode only.
    pub fn unload_model(&self, name: &str) -> Result<(), ControlError> {
        let source = self.explicit_source("unload")?;
        let _changing = source.changing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut served = self.served.write().unwrap_or_else(PoisonError::into_inner);
        let old = served.models.remove(name);
        if old.is_none() && !served.unavailable.contains_key(name) {
            return Err(ControlError::Unknown(format!("no model `{name}` in the repository")));
        }
        served.unavailable.insert(name.to_owned(), Unavailable::unloaded());
        drop(served);
        source.stamps.lock().unwrap_or_else(PoisonError::into_inner).remove(name);
        tracing::info!(model = %name, "model unloaded (requests in flight finish on it)");
        Ok(())
    }

    /// Poll mode: loads the models of the folder that are new or whose files changed, and
    /// forgets those whose folder is gone. Returns how many models changed.
    pub fn poll(&self) -> usize {
        let Some(source) = self.source.as_ref().filter(|s| s.mode == ControlMode::Poll) else { return 0 };
        let _changing = source.changing.lock().unwrap_or_else(PoisonError::into_inner);
        let scanned = match scan(&source.root) {
            Ok(scanned) => scanned,
            Err(error) => {
                tracing::warn!(%error, "polling the model repository");
                return 0;
            }
        };
        let mut changed = 0;
        let mut present = Vec::with_capacity(scanned.len());
        for found in scanned {
            match found {
                Ok(found) => {
                    present.push(found.name.clone());
                    let known = source.stamps.lock().unwrap_or_else(PoisonError::into_inner).get(&found.name).cloned();
                    if known != Some(stamp_of(&found)) {
                        changed += 1;
                        if let Err(error) = self.reload(source, &found.name) {
                            tracing::error!(model = %found.name, %error, "polling: model not loaded");
                        }
                    }
                }
                Err((name, error)) => {
                    present.push(name.clone());
                    let mut served = self.served.write().unwrap_or_else(PoisonError::into_inner);
                    if !served.models.contains_key(&name) && !served.unavailable.contains_key(&name) {
                        served.unavailable.insert(name, Unavailable { version: "1".into(), error, unloaded: false });
                    }
                }
            }
        }
        let mut served = self.served.write().unwrap_or_else(PoisonError::into_inner);
        let gone: Vec<String> =
            served.models.keys().chain(served.unavailable.keys()).filter(|n| !present.contains(n)).cloned().collect();
        let mut dropped = Vec::with_capacity(gone.len());
        for name in &gone {
            dropped.extend(served.models.remove(name));
            served.unavailable.remove(name);
            source.stamps.lock().unwrap_or_else(PoisonError::into_inner).remove(name);
            tracing::info!(model = %name, "polling: the model's folder is gone; unloaded");
        }
        drop(served);
        drop(dropped);
        changed + gone.len()
    }

    fn explicit_source(&self, what: &str) -> Result<&Source, ControlError> {
        match &self.source {
            Some(source) if source.mode == ControlMode::Explicit => Ok(source),
            _ => Err(ControlError::NotAllowed(format!(
                "explicit model {what} is not allowed: the server runs with --model-control-mode {} \
                 (explicit takes load and unload requests)",
                match self.control_mode() {
                    ControlMode::None => "none",
                    ControlMode::Poll => "poll",
                    ControlMode::Explicit => "explicit",
                }
            ))),
        }
    }

    /// Builds, warms up and swaps in the model of folder `name` (the caller holds `changing`).
    fn reload(&self, source: &Source, name: &str) -> Result<(), ControlError> {
        // A name that could step out of the repository names no folder of it.
        let inside = !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\0']);
        let folder = source.root.join(name);
        if !inside || !folder.is_dir() {
            // A model listed only as unavailable whose folder is gone is forgotten, so that its
            // requests answer 404 (unknown) rather than 503 (it will not come back by itself);
            // one that serves keeps serving until unloaded.
            if inside {
                let mut served = self.served.write().unwrap_or_else(PoisonError::into_inner);
                if !served.models.contains_key(name) && served.unavailable.remove(name).is_some() {
                    source.stamps.lock().unwrap_or_else(PoisonError::into_inner).remove(name);
                    tracing::info!(model = %name, "load: the model's folder is gone; no longer listed");
                }
            }
            return Err(ControlError::Unknown(format!("no model folder `{name}` in the repository")));
        }
        if !valid_name(name) {
            return Err(ControlError::NotAllowed(format!("model folder `{name}`: {NAME_RULE}; rename the folder")));
        }
        let found = match scan_folder(name.to_owned(), folder) {
            Ok(found) => found,
            Err((_, error)) => return Err(self.failed(name, "1", error)),
        };
        source.record(&found);
        let refuse = |why: String| LoadError { path: found.folder.clone(), why };
        let config = ModelConfig::read(&found.folder.join("config.json")).map_err(refuse);
        let built = config
            .and_then(|config| build(name, &found.version, &found.file, None, &found.folder, config, &source.defaults));
        let mut model = match built {
            Ok(model) => model,
            Err(error) => return Err(self.failed(name, &found.version, error)),
        };
        if let Err(why) = model.warm_up() {
            let error = LoadError { path: found.file.clone(), why: format!("model `{name}`: {why}") };
            return Err(self.failed(name, &found.version, error));
        }
        let mut served = self.served.write().unwrap_or_else(PoisonError::into_inner);
        // The same version again: its statistics go on (Triton keeps them per version).
        if let Some(old) = served.models.get(name).filter(|old| old.version == found.version) {
            model.stats = Arc::clone(&old.stats);
            if let Some(batcher) = old.batcher() {
                model.stats.carry(&batcher.stats());
            }
        }
        let old = served.models.insert(name.to_owned(), Arc::new(model));
        served.unavailable.remove(name);
        drop(served);
        let replaced = old.as_ref().map(|m| m.version.clone());
        tracing::info!(model = %name, version = %found.version, ?replaced, "model loaded");
        // The old model ends when the last request holding it does.
        drop(old);
        Ok(())
    }

    /// A load that failed: a model that serves keeps serving; otherwise it is listed unavailable.
    fn failed(&self, name: &str, version: &str, error: LoadError) -> ControlError {
        let mut served = self.served.write().unwrap_or_else(PoisonError::into_inner);
        let serving = served.models.get(name).filter(|m| !m.failed()).map(|m| m.version.clone());
        let message = match &serving {
            Some(still) => format!("failed to load `{name}`: {error} (version {still} still serves)"),
            None => {
                served.models.remove(name);
                let unavailable = Unavailable { version: version.to_owned(), error: error.clone(), unloaded: false };
                served.unavailable.insert(name.to_owned(), unavailable);
                format!("failed to load `{name}`: {error}")
            }
        };
        tracing::error!(model = %name, cause = %error, "model not loaded");
        ControlError::Failed(message)
    }
}
