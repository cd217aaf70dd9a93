"""Exports torchvision's ResNet-50 (random weights) to ONNX, fp32 and fp16, opset 17, dynamic batch.
Runs on the GPU machine (torch + torchvision are there): python3 export_resnet.py OUT_FP32 OUT_FP16"""
import sys

import torch
import torchvision

fp32_path, fp16_path = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
model = torchvision.models.resnet50(weights=None).eval()
example = torch.randn(1, 3, 224, 224)
axes = {"input": {0: "batch"}, "logits": {0: "batch"}}
torch.onnx.export(model, example, fp32_path, opset_version=17, input_names=["input"],
                  output_names=["logits"], dynamic_axes=axes, dynamo=False)
torch.onnx.export(model.half().cuda(), example.half().cuda(), fp16_path, opset_version=17,
                  input_names=["input"], output_names=["logits"], dynamic_axes=axes, dynamo=False)
print("exported", fp32_path, fp16_path)
