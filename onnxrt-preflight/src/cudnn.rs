//! cuDNN's sub-libraries. `libcudnn.so.N` is only a front: it `dlopen`s the libraries that hold
//! the kernels when they are first needed (cuDNN 9: `libcudnn_engines_precompiled.so.9` at the
//! first convolution; cuDNN 8: `libcudnn_cnn_infer.so.8`), so no `NEEDED` entry lists them and a
//! missing one shows only at run time, as `CUDNN_STATUS_INTERNAL_ERROR` or "Could not load
//! library libcudnn_cnn_infer.so.8".

/// cuDNN 9's sub-libraries (CUDA 12 and 13 builds of ORT).
pub const CUDNN_9: &[&str] = &[
    "libcudnn_graph.so.9",
    "libcudnn_engines_precompiled.so.9",
    "libcudnn_engines_runtime_compiled.so.9",
    "libcudnn_heuristic.so.9",
    "libcudnn_ops.so.9",
    "libcudnn_cnn.so.9",
    "libcudnn_adv.so.9",
];

/// cuDNN 8's sub-libraries (the pinned 1.16.2 CUDA 11.8 build).
pub const CUDNN_8: &[&str] = &[
    "libcudnn_ops_infer.so.8",
    "libcudnn_ops_train.so.8",
    "libcudnn_cnn_infer.so.8",
    "libcudnn_cnn_train.so.8",
    "libcudnn_adv_infer.so.8",
    "libcudnn_adv_train.so.8",
];

/// The sub-libraries `front` (`libcudnn.so.9` or `libcudnn.so.8`) loads; empty for anything else.
pub fn sub_libraries(front: &str) -> &'static [&'static str] {
    match front {
        "libcudnn.so.9" => CUDNN_9,
        "libcudnn.so.8" => CUDNN_8,
        _ => &[],
    }
}

/// The cuDNN front library a provider library opens with `dlopen` rather than through a `NEEDED`
/// entry: ORT's CUDA 12 and 13 builds load `libcudnn.so.9` at run time (the 1.16.2 CUDA 11.8
/// build names `libcudnn.so.8` in `NEEDED`). Decided from the CUDA runtime the library needs.
pub fn front_loaded_at_run_time(needed: &[String]) -> Option<&'static str> {
    let names_cudnn = needed.iter().any(|n| n.starts_with("libcudnn"));
    let cuda_12_or_later = needed.iter().any(|n| n == "libcudart.so.12" || n == "libcudart.so.13");
    (cuda_12_or_later && !names_cudnn).then_some("libcudnn.so.9")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cudnn_9_is_opened_at_run_time_by_cuda_12_and_13_builds_only() {
        let needed = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(front_loaded_at_run_time(&needed(&["libcublasLt.so.13", "libcudart.so.13"])), Some("libcudnn.so.9"));
        assert_eq!(front_loaded_at_run_time(&needed(&["libcudart.so.11.0", "libcudnn.so.8"])), None);
        assert_eq!(front_loaded_at_run_time(&needed(&["libc.so.6"])), None);
        assert_eq!(sub_libraries("libcudnn.so.9").len(), 7);
    }
}
