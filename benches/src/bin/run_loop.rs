//! `run_loop CASE VARIANT RUNS`: makes one variant of one case and runs it RUNS times, timing
//! nothing. For whole-process comparisons (`hyperfine`, `/usr/bin/time`) and for profilers
//! (`valgrind --tool=callgrind`). VARIANT is one of: onnxrt-run, onnxrt-binding, onnxrt-trip,
//! c-run, c-binding, c-trip, ffi-run, ffi-binding (`-trip`: the whole round trip, see the crate
//! docs).

use onnxrt_benches::{
    case, library, onnxrt_binding, onnxrt_round_trip, onnxrt_run, raw_c::RawC, raw_ffi::RawFfi, Variant,
};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [case_key, variant, runs] = args.as_slice() else {
        eprintln!("usage: run_loop add1|add1mb|mlp|mul1|sigmoid onnxrt-run|onnxrt-binding|onnxrt-trip|c-run|c-binding|c-trip|ffi-run|ffi-binding RUNS");
        std::process::exit(2);
    };
    let case = case(case_key);
    let runs: u64 = runs.parse().expect("RUNS is a number");
    let library = library().expect("load the runtime");
    let mut variant = match variant.as_str() {
        "onnxrt-run" => onnxrt_run(&case).expect("session"),
        "onnxrt-binding" => onnxrt_binding(&case).expect("binding"),
        "onnxrt-trip" => onnxrt_round_trip(&case).expect("session"),
        "c-trip" => {
            let mut raw = RawC::open(&library, &case).expect("raw_run.c");
            Variant::new(variant.clone(), move |n| raw.round_trip(n))
        }
        "c-run" | "c-binding" => {
            let binding = variant == "c-binding";
            let mut raw = RawC::open(&library, &case).expect("raw_run.c");
            Variant::new(variant.clone(), move |n| raw.run(n, binding))
        }
        "ffi-run" | "ffi-binding" => {
            let binding = variant == "ffi-binding";
            let mut raw = RawFfi::open(&library, &case).expect("raw FFI");
            Variant::new(variant.clone(), move |n| raw.run(n, binding))
        }
        other => panic!("unknown variant `{other}`"),
    };
    variant.run(runs);
}
