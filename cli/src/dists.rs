//! The distributions of `vendor-manifest.toml` as this command needs them: their names (offered
//! by completion and `--help`, listed when a name is unknown) and, for the doctor, what each GPU
//! build needs from the machine. A copy, so that the command needs neither a TOML parser nor
//! build-support's download stack (rustls, ureq) unless built with `fetch`; a unit test
//! compares it with build-support's manifest field by field, so the two cannot drift apart.

use clap::builder::{PossibleValue, TypedValueParser};

use crate::error::{CliError, Result};

/// What a GPU distribution needs from the machine (`[dist.requires]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requires {
    /// CUDA version the build targets.
    pub cuda: &'static str,
    /// cuDNN version recommended.
    pub cudnn: &'static str,
    /// Whether TensorRT is needed only for the TensorRT provider.
    pub tensorrt_optional: bool,
    /// Oldest NVIDIA driver for that CUDA.
    pub driver_min: &'static str,
    /// Newest GPU architecture that CUDA knows.
    pub max_compute_capability: &'static str,
    /// Libraries the CUDA provider needs at load time.
    pub needed: &'static [&'static str],
    /// Libraries the TensorRT provider needs at load time.
    pub needed_tensorrt: &'static [&'static str],
}

/// One distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dist {
    /// Its name (`ONNXRT_DIST`).
    pub name: &'static str,
    /// The ONNX Runtime version.
    pub ort_version: &'static str,
    /// GPU needs; `None` for a CPU build.
    pub requires: Option<Requires>,
}

const CUDA_11_8: Requires = Requires {
    cuda: "11.8",
    cudnn: "8.9",
    tensorrt_optional: true,
    driver_min: "520.61.05",
    max_compute_capability: "9.0",
    needed: &[
        "libcublasLt.so.11",
        "libcublas.so.11",
        "libcudart.so.11.0",
        "libcufft.so.10",
        "libcurand.so.10",
        "libcudnn.so.8",
    ],
    needed_tensorrt: &["libnvinfer.so.8", "libnvinfer_plugin.so.8", "libnvonnxparser.so.8"],
};

const CUDA_13_0: Requires = Requires {
    cuda: "13.0",
    cudnn: "9",
    tensorrt_optional: true,
    driver_min: "580.65.06",
    max_compute_capability: "12.0",
    needed: &[
        "libcublasLt.so.13",
        "libcublas.so.13",
        "libcurand.so.10",
        "libcudart.so.13",
        "libcuda.so.1",
        "libcudnn.so.9",
    ],
    needed_tensorrt: &["libnvinfer.so.10", "libnvonnxparser.so.10", "libcudnn.so.9"],
};

/// The distributions, in the manifest's order.
const DISTS: &[Dist] = &[
    Dist { name: "gpu-1.16.2", ort_version: "1.16.2", requires: Some(CUDA_11_8) },
    Dist { name: "cpu-1.16.2", ort_version: "1.16.2", requires: None },
    Dist { name: "cpu-1.16.2-registry", ort_version: "1.16.2", requires: None },
    Dist { name: "cpu-1.32.0-registry", ort_version: "1.32.0", requires: None },
    Dist { name: "gpu-cuda13-1.30.0", ort_version: "1.30.0", requires: Some(CUDA_13_0) },
    Dist { name: "cpu-1.32.0", ort_version: "1.32.0", requires: None },
    Dist { name: "gpu-cuda13-1.30.0-wheel", ort_version: "1.30.0", requires: Some(CUDA_13_0) },
];

/// The distributions.
#[derive(Debug, Clone, Copy)]
pub struct Manifest {
    /// Every distribution.
    pub dists: &'static [Dist],
}

impl Manifest {
    /// The distributions this command knows (those of the crate's `vendor-manifest.toml`).
    pub fn builtin() -> Manifest {
        Manifest { dists: DISTS }
    }

    /// The distribution called `name`.
    ///
    /// # Errors
    /// [`CliError::Failed`] listing the known names.
    pub fn dist(&self, name: &str) -> Result<&'static Dist> {
        let dists: &'static [Dist] = self.dists;
        dists.iter().find(|d| d.name == name).ok_or_else(|| {
            let names: Vec<String> = dists.iter().map(|d| d.name.to_owned()).collect();
            CliError::Failed(unknown(name, &names))
        })
    }
}

/// The names of the distributions.
pub fn known() -> impl Iterator<Item = &'static str> {
    DISTS.iter().map(|d| d.name)
}

/// The message for a name the manifest does not have.
pub fn unknown(name: &str, known: &[String]) -> String {
    format!(
        "no distribution named `{name}`; the known distributions are: {}\nSee `onnxrt fetch --help`.",
        known.join(", ")
    )
}

/// Takes any text (the command checks it and says what the known names are) but tells clap the
/// manifest's names, so that completion scripts and `--help` offer them.
#[derive(Debug, Clone, Copy, Default)]
pub struct DistName;

impl TypedValueParser for DistName {
    type Value = String;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        value.to_str().map(str::to_owned).ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidUtf8))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(known().map(PossibleValue::new)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_matches_build_supports_manifest() {
        let theirs = build_support::Manifest::builtin().expect("manifest");
        // The test-only distribution is for build-support's and this command's tests, and a plugin
        // bundle is no runtime (`onnxrt-dist assemble` makes it): neither is offered here.
        let offered: Vec<&build_support::Dist> = theirs.dists.iter().filter(|d| !d.test_only && !d.plugin).collect();
        let names: Vec<&str> = offered.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(known().collect::<Vec<_>>(), names);
        for (ours, theirs) in DISTS.iter().zip(offered) {
            assert_eq!(ours.ort_version, theirs.ort_version, "{}", ours.name);
            match (&ours.requires, &theirs.requires) {
                (None, None) => {}
                (Some(o), Some(t)) => {
                    let text = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<String>>();
                    assert_eq!(
                        (o.cuda, o.cudnn, o.tensorrt_optional, o.driver_min, o.max_compute_capability),
                        (
                            t.cuda.as_str(),
                            t.cudnn.as_str(),
                            t.tensorrt_optional,
                            t.driver_min.as_str(),
                            t.max_compute_capability.as_str()
                        ),
                        "{}",
                        ours.name
                    );
                    assert_eq!(
                        (text(o.needed), text(o.needed_tensorrt)),
                        (t.needed.clone(), t.needed_tensorrt.clone())
                    );
                }
                (o, t) => panic!("{}: requires {o:?} here, {t:?} in the manifest", ours.name),
            }
        }
    }

    #[test]
    fn the_names_are_offered_and_an_unknown_one_lists_them() {
        let names: Vec<String> = known().map(str::to_owned).collect();
        assert!(names.iter().any(|n| n == "cpu-1.16.2-registry"), "{names:?}");
        let err = Manifest::builtin().dist("nonsense").expect_err("unknown");
        assert!(err.to_string().contains("cpu-1.16.2-registry"), "{err}");
        let text = unknown("nonsense", &names);
        assert!(text.contains("`nonsense`") && text.contains("cpu-1.16.2-registry"), "{text}");
        assert!(!text.contains("config.toml") && !text.contains("ONNXRT_DIST"), "{text}");
    }
}
