//! Decodes the real backend test data shipped with the `onnx` Python package.
//!
//! Each test prints a message and passes when `python3`/`onnx` is not installed, since the
//! data cannot be found then.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use onnxrt_testdata::{
    case_dirs, elem_type, float8_value, light_input, load_model_summary, load_value, onnx_backend_data_dir,
    DecodeError, TensorData, TestCase, TestValue, TypeKind,
};

fn data_root() -> Option<PathBuf> {
    let root = onnx_backend_data_dir();
    if root.is_none() {
        println!("skipped: no onnx backend test data (python3 with onnx not found)");
    }
    root
}

/// Every (file, kind) pair of a case's data sets, inputs first.
fn case_files(case: &TestCase) -> Vec<(PathBuf, TypeKind)> {
    let summary = load_model_summary(&case.model).expect("model summary decodes");
    let mut files = Vec::new();
    for set in &case.data_sets {
        for (i, path) in set.inputs.iter().enumerate() {
            let kind = summary.inputs.get(i).map_or(TypeKind::Unknown, |(_, k)| *k);
            files.push((path.clone(), kind));
        }
        for (i, path) in set.outputs.iter().enumerate() {
            let kind = summary.outputs.get(i).map_or(TypeKind::Unknown, |(_, k)| *k);
            files.push((path.clone(), kind));
        }
    }
    files
}

#[derive(Default, Debug)]
struct Tally {
    decoded: usize,
    unsupported: usize,
    failed: Vec<(PathBuf, DecodeError)>,
    by_kind: BTreeMap<&'static str, usize>,
}

fn kind_name(v: &TestValue) -> &'static str {
    match v {
        TestValue::Tensor(_) => "tensor",
        TestValue::Sequence(_) => "sequence",
        TestValue::Map(_) => "map",
        TestValue::Optional(_) => "optional",
    }
}

#[test]
fn node_data_decodes() {
    let Some(root) = data_root() else { return };
    let cases = case_dirs(&root).expect("cases list");
    let mut tally = Tally::default();
    let mut unsupported_reasons = BTreeMap::new();
    for case in cases.iter().filter(|c| c.group == "node") {
        for (path, kind) in case_files(case) {
            match load_value(&path, kind) {
                Ok(v) => {
                    tally.decoded += 1;
                    *tally.by_kind.entry(kind_name(&v)).or_default() += 1;
                }
                Err(e) if e.is_unsupported() => {
                    tally.unsupported += 1;
                    *unsupported_reasons.entry(e.to_string()).or_insert(0usize) += 1;
                }
                Err(e) => tally.failed.push((path, e)),
            }
        }
    }
    let total = tally.decoded + tally.unsupported + tally.failed.len();
    println!(
        "node/: {total} files, {} decoded {:?}, {} unsupported {:?}, {} failed",
        tally.decoded,
        tally.by_kind,
        tally.unsupported,
        unsupported_reasons,
        tally.failed.len()
    );
    for (path, err) in tally.failed.iter().take(20) {
        println!("  failed {}: {err}", path.display());
    }
    assert!(total > 3000, "expected the full node/ suite, found {total} files");
    assert!(tally.decoded * 100 >= total * 95, "only {} of {total} decoded", tally.decoded);
    assert!(tally.failed.is_empty(), "real data must not look malformed");
}

#[test]
fn abs_output_is_abs_of_input() {
    let Some(root) = data_root() else { return };
    let set = root.join("node/test_abs/test_data_set_0");
    let kind = TypeKind::Tensor { elem_type: elem_type::FLOAT };
    let input = load_value(set.join("input_0.pb"), kind).expect("input decodes");
    let output = load_value(set.join("output_0.pb"), kind).expect("output decodes");
    let (Some(input), Some(output)) = (input.as_tensor(), output.as_tensor()) else {
        panic!("abs data must be tensors");
    };
    assert_eq!(input.dims, vec![3, 4, 5]);
    assert_eq!(input.dims, output.dims);
    let (TensorData::F32(x), TensorData::F32(y)) = (&input.data, &output.data) else {
        panic!("abs data must be float");
    };
    assert_eq!(x.len(), 60);
    assert!(x.iter().any(|v| *v < 0.0), "input should have negatives");
    for (a, b) in x.iter().zip(y) {
        assert_eq!(a.abs(), *b);
    }
}

#[test]
fn sequence_and_optional_data() {
    let Some(root) = data_root() else { return };
    let set = root.join("node/test_identity_sequence/test_data_set_0");
    let input = load_value(set.join("input_0.pb"), TypeKind::Sequence).expect("decodes");
    let output = load_value(set.join("output_0.pb"), TypeKind::Sequence).expect("decodes");
    let TestValue::Sequence(items) = &input else {
        panic!("expected a sequence, got {input:?}");
    };
    assert!(!items.is_empty());
    assert!(items.iter().all(|v| v.as_tensor().is_some()));
    assert_eq!(input, output);

    let opt_case = root.join("node/test_identity_opt");
    let summary = load_model_summary(opt_case.join("model.onnx")).expect("model decodes");
    assert_eq!(summary.inputs[0].1, TypeKind::Optional);
    let v = load_value(opt_case.join("test_data_set_0/input_0.pb"), TypeKind::Optional).expect("optional decodes");
    assert!(matches!(v, TestValue::Optional(Some(_))), "{v:?}");
}

#[test]
fn half_and_bfloat_data() {
    let Some(root) = data_root() else { return };
    let kind = TypeKind::Unknown;
    let f16_in =
        load_value(root.join("node/test_cast_FLOAT16_to_FLOAT/test_data_set_0/input_0.pb"), kind).expect("f16 decodes");
    let f32_out = load_value(root.join("node/test_cast_FLOAT16_to_FLOAT/test_data_set_0/output_0.pb"), kind)
        .expect("f32 decodes");
    let (Some(a), Some(b)) = (f16_in.as_tensor(), f32_out.as_tensor()) else {
        panic!("tensors expected");
    };
    let TensorData::F16(halves) = &a.data else {
        panic!("f16 expected, got type {}", a.elem_type());
    };
    let TensorData::F32(floats) = &b.data else {
        panic!("f32 expected");
    };
    for (h, f) in halves.iter().zip(floats) {
        // Widening f16 -> f32 is exact, NaN aside.
        assert!(h.to_f32() == *f || (h.is_nan() && f.is_nan()));
    }

    // The onnx package stores bfloat16 data as UINT16 bit patterns; the model's declared
    // type turns it back into bfloat16.
    let case = root.join("node/test_cast_BFLOAT16_to_FLOAT");
    let summary = load_model_summary(case.join("model.onnx")).expect("model decodes");
    let bf16_kind = summary.inputs[0].1;
    assert_eq!(bf16_kind, TypeKind::Tensor { elem_type: elem_type::BFLOAT16 });
    let input = case.join("test_data_set_0/input_0.pb");
    let raw = load_value(&input, kind).expect("decodes");
    assert_eq!(raw.as_tensor().map(|t| t.elem_type()), Some(elem_type::UINT16));
    let bf = load_value(&input, bf16_kind).expect("bf16 decodes");
    let out = load_value(case.join("test_data_set_0/output_0.pb"), kind).expect("decodes");
    let (Some(TensorData::BF16(x)), Some(TensorData::F32(y))) =
        (bf.as_tensor().map(|t| &t.data), out.as_tensor().map(|t| &t.data))
    else {
        panic!("bf16 in, f32 out expected");
    };
    for (b, f) in x.iter().zip(y) {
        // Widening bf16 -> f32 is exact, NaN aside.
        assert!(b.to_f32() == *f || (b.is_nan() && f.is_nan()));
    }
}

#[test]
fn every_group_lists_and_summarizes() {
    let Some(root) = data_root() else { return };
    let cases = case_dirs(&root).expect("cases list");
    let mut per_group: BTreeMap<&str, usize> = BTreeMap::new();
    for case in &cases {
        *per_group.entry(case.group.as_str()).or_default() += 1;
        let summary = load_model_summary(&case.model).unwrap_or_else(|e| panic!("{}: {e}", case.model.display()));
        assert!(!case.data_sets.is_empty(), "{} has no data", case.name);
        for set in &case.data_sets {
            assert_eq!(set.outputs.len(), summary.outputs.len(), "{}", case.name);
            if !set.generated_inputs {
                assert_eq!(set.inputs.len(), summary.inputs.len(), "{}", case.name);
            }
        }
    }
    println!("cases per group: {per_group:?}");
    for group in ["node", "simple", "pytorch-converted", "pytorch-operator", "light"] {
        assert!(per_group.get(group).copied().unwrap_or(0) > 0, "no {group} cases");
    }
    let abs = cases.iter().find(|c| c.group == "node" && c.name == "test_abs").expect("test_abs listed");
    assert_eq!(abs.data_sets.len(), 1);
    assert_eq!(abs.data_sets[0].inputs.len(), 1);
}

#[test]
fn other_groups_decode() {
    let Some(root) = data_root() else { return };
    let cases = case_dirs(&root).expect("cases list");
    let mut decoded = 0;
    for case in cases.iter().filter(|c| c.group != "node") {
        for (path, kind) in case_files(case) {
            load_value(&path, kind).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            decoded += 1;
        }
    }
    println!("non-node groups: {decoded} files decoded");
    assert!(decoded > 100);
}

#[test]
fn light_models_get_generated_inputs() {
    let Some(root) = data_root() else { return };
    let cases = case_dirs(&root).expect("cases list");
    let resnet =
        cases.iter().find(|c| c.group == "light" && c.name == "light_resnet50").expect("light_resnet50 listed");
    let set = &resnet.data_sets[0];
    assert!(set.generated_inputs && set.inputs.is_empty());
    let summary = load_model_summary(&resnet.model).expect("decodes");
    assert_eq!(summary.inputs.len(), 1);
    let shape = summary.input_shapes[0].as_deref().unwrap_or(&[]);
    let input = light_input(shape).expect("builds");
    assert_eq!(input.dims, vec![1, 3, 224, 224]);
    let out = load_value(&set.outputs[0], summary.outputs[0].1).expect("output decodes");
    assert_eq!(out.as_tensor().map(|t| t.dims.clone()), Some(vec![1, 1000]));
}

/// Little-endian bytes of the elements, the same layout numpy's `tobytes()` gives.
fn le_bytes(data: &TensorData) -> Vec<u8> {
    fn cat<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| f(x)).collect()
    }
    match data {
        TensorData::F32(v) => cat(v, f32::to_le_bytes),
        TensorData::F64(v) => cat(v, f64::to_le_bytes),
        TensorData::F16(v) => cat(v, |x| x.to_le_bytes()),
        TensorData::BF16(v) => cat(v, |x| x.to_le_bytes()),
        TensorData::I8(v) => cat(v, i8::to_le_bytes),
        TensorData::I16(v) => cat(v, i16::to_le_bytes),
        TensorData::I32(v) => cat(v, i32::to_le_bytes),
        TensorData::I64(v) => cat(v, i64::to_le_bytes),
        TensorData::U8(v) => v.clone(),
        TensorData::U16(v) => cat(v, u16::to_le_bytes),
        TensorData::U32(v) => cat(v, u32::to_le_bytes),
        TensorData::U64(v) => cat(v, u64::to_le_bytes),
        TensorData::Bool(v) => v.iter().map(|&b| u8::from(b)).collect(),
        TensorData::String(v) => v.join(&b"\n"[..]),
        // numpy_helper gives 8-bit floats as float32 values.
        TensorData::Float8 { elem_type, bits } => {
            cat(bits, |b| (float8_value(*elem_type, b).expect("an 8-bit float type") as f32).to_le_bytes())
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads each file with `onnx.numpy_helper` and prints `path<TAB>dims<TAB>type<TAB>hex`.
const NUMPY_DUMP: &str = r#"
import sys, numpy as np, onnx
from onnx import numpy_helper
for line in sys.stdin:
    path = line.rstrip("\n")
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    a = numpy_helper.to_array(t)
    if t.data_type == onnx.TensorProto.BFLOAT16:
        # onnx 1.14 widens bfloat16 to float32; the top half is the original bits.
        a = (a.astype(np.float32).view(np.uint32) >> 16).astype("<u2")
    if t.data_type == onnx.TensorProto.STRING:
        data = b"\n".join(x if isinstance(x, bytes) else x.encode() for x in a.flatten().tolist())
    else:
        data = a.astype(a.dtype.newbyteorder("<")).tobytes()
    dims = ",".join(str(d) for d in t.dims)
    print(f"{path}\t{dims}\t{t.data_type}\t{data.hex()}")
"#;

/// Cross-checks every tensor file under node/ against onnx's own numpy decoder, bit for bit.
#[test]
fn tensors_match_numpy_helper() {
    let Some(root) = data_root() else { return };
    let cases = case_dirs(&root).expect("cases list");
    let mut ours = BTreeMap::new();
    for case in cases.iter().filter(|c| c.group == "node") {
        for (path, kind) in case_files(case) {
            if !matches!(kind, TypeKind::Tensor { .. }) {
                continue;
            }
            // No type hint: compare the file's own data_type with what numpy sees.
            let Ok(TestValue::Tensor(t)) = load_value(&path, TypeKind::Unknown) else {
                continue;
            };
            // Strings can hold newlines, which would break the line-based exchange.
            if let TensorData::String(s) = &t.data {
                if s.iter().any(|x| x.contains(&b'\n')) {
                    continue;
                }
            }
            let dims: Vec<String> = t.dims.iter().map(i64::to_string).collect();
            let line = format!("{}\t{}\t{}", dims.join(","), t.elem_type(), hex(&le_bytes(&t.data)));
            ours.insert(path_key(&path), line);
        }
    }
    let mut child =
        match Command::new("python3").args(["-c", NUMPY_DUMP]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn() {
            Ok(c) => c,
            Err(e) => {
                println!("skipped: cannot run python3: {e}");
                return;
            }
        };
    let list: String = ours.keys().map(|p| format!("{p}\n")).collect();
    let mut stdin = child.stdin.take().expect("stdin piped");
    let writer = std::thread::spawn(move || stdin.write_all(list.as_bytes()));
    let out = child.wait_with_output().expect("python runs");
    writer.join().expect("writer thread").expect("write file list");
    assert!(out.status.success(), "python dump failed");
    let text = String::from_utf8(out.stdout).expect("utf-8 output");
    let mut compared = 0;
    for line in text.lines() {
        let (path, rest) = line.split_once('\t').expect("tab-separated line");
        let mine = ours.get(path).expect("python only reads listed files");
        assert_eq!(mine, rest, "{path} differs from numpy_helper");
        compared += 1;
    }
    println!("{compared} tensor files identical to onnx.numpy_helper");
    assert_eq!(compared, ours.len());
}

fn path_key(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
