//! The doctor's `provider devices` row: the devices every registered provider sees on ONNX
//! Runtime >= 1.22 (here the CPU provider's CPU), a SKIP naming the version on older runtimes.

mod common;

use common::{onnxrt, row, rows, run};

#[test]
fn the_doctor_lists_the_devices_providers_see() {
    let ran = run(onnxrt().args(["doctor", "--json"]));
    let found = rows(&ran);
    let runtime = row(&found, "runtime");
    let devices = row(&found, "provider devices");
    if runtime.2.contains("ONNX Runtime 1.16") {
        assert_eq!(devices.1, "SKIP", "{devices:?}");
        assert!(devices.2.contains("1.22"), "{devices:?}");
    } else {
        assert_eq!(devices.1, "OK", "{devices:?}");
        assert!(devices.2.contains("CPUExecutionProvider on CPU"), "{devices:?}");
    }
}
