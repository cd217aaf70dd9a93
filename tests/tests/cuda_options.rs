//! CUDA provider options that newer runtimes added: on a runtime older than the
//! option, building the session fails with `Error::Unsupported` naming the option and the version
//! that has it, before the provider is loaded, so this runs on the CPU-only 1.16.2 runtime CI
//! uses. Options 1.16 already knows pass the gate and reach the provider (which that runtime does
//! not have, a different error).
#![cfg(feature = "cuda")]

use std::path::{Path, PathBuf};

use onnxrt::providers::cuda::{ConvAlgoSearch, CudaOptions, OPTION_SINCE};
use onnxrt::{Error, Session};

fn model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/models/add_f32.onnx")
}

/// The loaded runtime's minor version (1.x).
fn minor() -> u32 {
    let version = onnxrt::runtime_info().expect("runtime").version;
    version.split('.').nth(1).and_then(|m| m.parse().ok()).expect("version 1.x")
}

fn build(options: CudaOptions) -> onnxrt::Result<Session> {
    Session::builder().cuda(options).commit_from_file(model())
}

#[test]
fn newer_options_on_an_older_runtime_name_the_option_and_the_version() {
    let found = minor();
    let typed: [(&str, CudaOptions); 3] = [
        ("prefer_nhwc", CudaOptions::new().prefer_nhwc(true)),
        ("use_tf32", CudaOptions::new().use_tf32(false)),
        ("use_ep_level_unified_stream", CudaOptions::new().use_ep_level_unified_stream(true)),
    ];
    let mut checked = 0;
    for (key, options) in typed {
        let since = OPTION_SINCE.iter().find(|(k, _)| *k == key).expect("listed").1;
        if found >= since {
            println!("skipped `{key}`: this runtime (1.{found}) has it");
            continue;
        }
        // The same key through `raw`, and through `provider("CUDA", ..)`, is gated too: all three
        // go through one append path.
        let by_name = || Session::builder().provider("CUDA", [(key, "1")]).commit_from_file(model());
        for built in [build(options), build(CudaOptions::new().raw(key, 1)), by_name()] {
            match built {
                Err(Error::Unsupported { feature, since: needed, found: loaded }) => {
                    assert!(feature.contains(key), "{feature}");
                    assert_eq!(needed, format!("1.{since}"));
                    assert!(loaded.starts_with(&format!("1.{found}")), "{loaded}");
                    let text = Error::Unsupported { feature, since: needed, found: loaded }.to_string();
                    assert!(text.contains(key) && text.contains("or newer"), "{text}");
                    checked += 1;
                }
                other => panic!("`{key}` on ORT 1.{found} was not refused as too new: {other:?}"),
            }
        }
    }
    if found < 17 {
        assert_eq!(checked, 9, "every option newer than the runtime was checked, three ways");
    }
}

#[test]
fn every_gated_key_of_both_providers_is_refused_by_name_on_an_older_runtime_and_is_an_allowed_key() {
    let found = minor();
    let mut checked = 0;
    let providers = [
        ("CUDA", OPTION_SINCE, &onnxrt::allowed_keys::CUDA),
        ("TensorRT", onnxrt::providers::tensorrt::OPTION_SINCE, &onnxrt::allowed_keys::TENSORRT),
    ];
    for (provider, gates, table) in providers {
        for &(key, since) in gates {
            // A gate on a key the allow-list refuses would never be reached.
            assert!(table.check_all([key]).is_ok(), "{provider} `{key}` is gated but not an allowed key");
            if found >= since {
                continue;
            }
            let built = Session::builder().provider(provider, [(key, "1")]).commit_from_file(model());
            match built {
                Err(Error::Unsupported { feature, since: needed, .. }) => {
                    assert!(feature.contains(key) && feature.contains(provider), "{feature}");
                    assert_eq!(needed, format!("1.{since}"));
                    checked += 1;
                }
                other => panic!("{provider} `{key}` on ORT 1.{found} was not refused as too new: {other:?}"),
            }
        }
    }
    if found < 17 {
        assert_eq!(checked, OPTION_SINCE.len() + onnxrt::providers::tensorrt::OPTION_SINCE.len());
    }
}

#[test]
fn options_the_runtime_knows_pass_the_gate() {
    let options = CudaOptions::new()
        .cudnn_conv_algo_search(ConvAlgoSearch::Heuristic)
        .cudnn_conv_use_max_workspace(true)
        .tunable_op(true, false)
        .tunable_op_max_tuning_duration_ms(100);
    // SAFETY: no run is made on a session built with these options.
    let options = unsafe { options.do_copy_in_default_stream(true).enable_cuda_graph(true) };
    // Past the gate the CPU-only runtime has no CUDA provider: that, not `Unsupported`.
    match build(options) {
        Err(Error::Unsupported { feature, .. }) => panic!("an option 1.16 knows was gated: {feature}"),
        Err(e) => println!("past the gate: {e}"),
        Ok(_) => println!("a CUDA runtime accepted every option"),
    }
}
