//! `Value::from_array` on slices of a larger array: a standard-layout slice becomes a tensor over
//! exactly its own elements, also through a real run; any other layout is copied. From the second
//! outside audit. Runs in the normal suite and under valgrind
//! (tools/reliability/memcheck.sh).

use ndarray::{s, Array, Array2, Array3};
use onnxrt::Value;
use onnxrt_tests::session;

fn filled(value: f32) -> Value<'static> {
    Value::from_array(Array2::from_elem((2, 3), value)).expect("a [2, 3] tensor")
}

fn elements(value: &Value<'_>) -> Vec<f32> {
    value.view::<f32>().expect("an f32 tensor").iter().copied().collect()
}

#[test]
fn from_array_takes_standard_layout_slices_of_a_larger_array() {
    // An owned, standard-layout slice keeps the whole buffer; only its part is the tensor.
    let rows = || Array::from_shape_vec((4, 3), (0..12).map(|v| v as f32).collect()).expect("4x3");
    let cases: [(&str, Array2<f32>); 4] = [
        ("middle rows, with a tail", rows().slice_move(s![1..3, ..])),
        ("last rows, no tail", rows().slice_move(s![2..4, ..])),
        ("first rows, with a tail", rows().slice_move(s![0..1, ..])),
        ("one middle row", rows().slice_move(s![2..3, ..])),
    ];
    for (what, slice) in cases {
        assert!(slice.is_standard_layout(), "{what}");
        let expected: Vec<f32> = slice.iter().copied().collect();
        let shape: Vec<i64> = slice.shape().iter().map(|&d| d as i64).collect();
        let value = Value::from_array(slice).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(value.tensor_info().expect("info").shape, shape, "{what}");
        assert_eq!(elements(&value), expected, "{what}");
    }
    // Rank 3, a middle block, then through a real run: the values ORT reads are the slice's.
    let blocks = Array3::from_shape_fn((4, 2, 3), |(i, j, k)| (i * 100 + j * 10 + k) as f32);
    let a =
        Value::from_array(blocks.slice_move(s![1..2, .., ..]).into_shape_with_order((2, 3)).expect("2x3")).expect("a");
    let b = filled(0.5);
    let session = session("add_f32.onnx");
    let outputs = session.run([("a", &a), ("b", &b)]).expect("run");
    assert_eq!(elements(&outputs[0]), [100.5, 101.5, 102.5, 110.5, 111.5, 112.5]);
    // Not standard layout (a column): copied, as before.
    let column = rows().slice_move(s![.., 1..2]);
    assert_eq!(elements(&Value::from_array(column).expect("column")), [1.0, 4.0, 7.0, 10.0]);
}
