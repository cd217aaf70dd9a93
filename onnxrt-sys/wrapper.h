/* The ONNX Runtime C API: the only header bindgen reads. */
#include <onnxruntime_c_api.h>
