"""Writes add_w.onnx_adapter: a LoRA-style adapter (ONNX Runtime's adapter format) with one
parameter `w` = [1, 2, 3, 4] (f32), for tests/tests/lora_adapters.rs, whose model computes
y = x + w with `w` an input whose default (an initializer) is zeros.

Made with ONNX Runtime's Python API (onnxruntime >= 1.20, here 1.32.0):
    python3 make_adapter.py
"""
import numpy as np
import onnxruntime as ort

adapter = ort.AdapterFormat()
adapter.set_adapter_version(1)
adapter.set_model_version(1)
adapter.set_parameters({"w": ort.OrtValue.ortvalue_from_numpy(np.array([1, 2, 3, 4], dtype=np.float32))})
adapter.export_adapter("add_w.onnx_adapter")
