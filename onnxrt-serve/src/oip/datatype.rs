//! The protocol's tensor data types (`"FP32"`, `"INT64"`, `"BYTES"`…) and ONNX element types.

use onnxrt::ElementType;

/// The protocol's name of an ONNX element type; `None` for types the protocol has no name for
/// (complex numbers, the float8 types).
pub fn datatype_of(element: ElementType) -> Option<&'static str> {
    Some(match element {
        ElementType::Bool => "BOOL",
        ElementType::U8 => "UINT8",
        ElementType::U16 => "UINT16",
        ElementType::U32 => "UINT32",
        ElementType::U64 => "UINT64",
        ElementType::I8 => "INT8",
        ElementType::I16 => "INT16",
        ElementType::I32 => "INT32",
        ElementType::I64 => "INT64",
        ElementType::F16 => "FP16",
        ElementType::BF16 => "BF16",
        ElementType::F32 => "FP32",
        ElementType::F64 => "FP64",
        ElementType::String => "BYTES",
        _ => return None,
    })
}

/// The ONNX element type of a protocol data type name (exact, upper case as the protocol writes it).
pub fn element_type_of(datatype: &str) -> Option<ElementType> {
    Some(match datatype {
        "BOOL" => ElementType::Bool,
        "UINT8" => ElementType::U8,
        "UINT16" => ElementType::U16,
        "UINT32" => ElementType::U32,
        "UINT64" => ElementType::U64,
        "INT8" => ElementType::I8,
        "INT16" => ElementType::I16,
        "INT32" => ElementType::I32,
        "INT64" => ElementType::I64,
        "FP16" => ElementType::F16,
        "BF16" => ElementType::BF16,
        "FP32" => ElementType::F32,
        "FP64" => ElementType::F64,
        "BYTES" => ElementType::String,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_type_maps_back_to_itself() {
        let names = [
            "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "BF16", "FP32",
            "FP64", "BYTES",
        ];
        for name in names {
            let element = element_type_of(name).expect(name);
            assert_eq!(datatype_of(element), Some(name));
        }
        assert_eq!(element_type_of("fp32"), None, "the protocol's names are upper case");
        assert_eq!(datatype_of(ElementType::Complex64), None);
    }
}
