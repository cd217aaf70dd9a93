"""An onnxruntime model runtime for MLServer (which has no official ONNX runtime), for the CPU
comparison of BENCHMARKS.md. A model folder names it in model-settings.json:

    {"name": "cls", "implementation": "mlserver_onnx.OnnxModel",
     "parameters": {"uri": "./model.onnx"}, "max_batch_size": 16, "max_batch_time": 0.001}

with this file's folder on PYTHONPATH; `"parameters": {..., "extra": {"provider": "cuda"}}` runs it
on the GPU (default `cpu`). Each input is decoded with MLServer's NumpyCodec, the
session runs, each output is encoded back; MLServer's adaptive batching (max_batch_size > 1)
concatenates requests along the first axis before `predict` and splits the answers after it.
"""

from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse
from mlserver.utils import get_model_uri

from ort_session import session


class OnnxModel(MLModel):
    """One onnxruntime InferenceSession, on the CPU unless the settings name another provider."""

    async def load(self) -> bool:
        path = await get_model_uri(self._settings)
        extra = (self._settings.parameters.extra if self._settings.parameters else None) or {}
        self._session = session(path, extra.get("provider", "cpu"))
        self._output_names = [o.name for o in self._session.get_outputs()]
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        feeds = {request_input.name: NumpyCodec.decode_input(request_input) for request_input in payload.inputs}
        results = self._session.run(None, feeds)
        outputs = [NumpyCodec.encode_output(name, value) for name, value in zip(self._output_names, results)]
        return InferenceResponse(model_name=self.name, model_version=self.version, id=payload.id, outputs=outputs)
