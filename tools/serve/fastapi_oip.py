"""The FastAPI anchor of the CPU comparison (BENCHMARKS.md): FastAPI + uvicorn + onnxruntime answering
the Open Inference Protocol's REST side for one ONNX model, JSON tensors only.

    MODEL=path/model.onnx MODEL_NAME=cls [PROVIDER=cuda] uvicorn fastapi_oip:app --port 9000

Routes: GET /v2/health/live, GET /v2/health/ready, GET /v2/models/{name} (inputs and outputs
from the session), POST /v2/models/{name}/infer. The session runs on the thread pool, so
onnxruntime (which releases the GIL) can run requests side by side; the body is parsed with
json.loads, not a pydantic model, as a careful engineer would write it. No batching.
"""

import json
import os

import numpy as np
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ort_session import session

# The protocol's data type names of the numpy and ONNX element types this anchor handles.
DATATYPE_OF_ONNX = {
    "tensor(float)": "FP32",
    "tensor(double)": "FP64",
    "tensor(float16)": "FP16",
    "tensor(int64)": "INT64",
    "tensor(int32)": "INT32",
    "tensor(int8)": "INT8",
    "tensor(uint8)": "UINT8",
    "tensor(bool)": "BOOL",
}
NUMPY_OF_DATATYPE = {
    "FP32": np.float32,
    "FP64": np.float64,
    "FP16": np.float16,
    "INT64": np.int64,
    "INT32": np.int32,
    "INT8": np.int8,
    "UINT8": np.uint8,
    "BOOL": np.bool_,
}
DATATYPE_OF_NUMPY = {np.dtype(v): k for k, v in NUMPY_OF_DATATYPE.items()}

MODEL_NAME = os.environ.get("MODEL_NAME", "model")
SESSION = session(os.environ["MODEL"], os.environ.get("PROVIDER", "cpu"))

app = FastAPI()


def tensor_metadata(arg):
    shape = [d if isinstance(d, int) else -1 for d in arg.shape]
    return {"name": arg.name, "datatype": DATATYPE_OF_ONNX.get(arg.type, arg.type), "shape": shape}


def check_model(name: str):
    if name != MODEL_NAME:
        raise HTTPException(status_code=404, detail=f"no model `{name}`; this server has [{MODEL_NAME!r}]")


@app.get("/v2/health/live")
def live():
    return {"live": True}


@app.get("/v2/health/ready")
def ready():
    return {"ready": True}


@app.get("/v2/models/{name}")
def metadata(name: str):
    check_model(name)
    return {
        "name": MODEL_NAME,
        "platform": "onnxruntime_onnx",
        "inputs": [tensor_metadata(i) for i in SESSION.get_inputs()],
        "outputs": [tensor_metadata(o) for o in SESSION.get_outputs()],
    }


def decode(tensor: dict) -> np.ndarray:
    datatype = tensor.get("datatype")
    if datatype not in NUMPY_OF_DATATYPE:
        raise HTTPException(status_code=400, detail=f"input `{tensor.get('name')}`: datatype {datatype} not handled")
    try:
        return np.asarray(tensor["data"], dtype=NUMPY_OF_DATATYPE[datatype]).reshape(tensor["shape"])
    except (KeyError, ValueError, TypeError) as error:
        raise HTTPException(status_code=400, detail=f"input `{tensor.get('name')}`: {error}") from error


# The body is read raw (no pydantic validation of the tensors), then parsed with json.loads;
# the session runs on the thread pool, so the event loop keeps reading requests meanwhile.
@app.post("/v2/models/{name}/infer")
async def infer(name: str, request: Request):
    check_model(name)
    raw = await request.body()
    try:
        payload = json.loads(raw)
        feeds = {t["name"]: decode(t) for t in payload["inputs"]}
    except (ValueError, KeyError, TypeError) as error:
        raise HTTPException(status_code=400, detail=f"not an infer request: {error}") from error
    results = await run_in_threadpool(SESSION.run, None, feeds)
    outputs = [
        {
            "name": meta.name,
            "datatype": DATATYPE_OF_NUMPY.get(value.dtype, str(value.dtype)),
            "shape": list(value.shape),
            "data": value.ravel().tolist(),
        }
        for meta, value in zip(SESSION.get_outputs(), results)
    ]
    text = json.dumps({"model_name": MODEL_NAME, "model_version": "1", "id": payload.get("id"), "outputs": outputs})
    return Response(content=text, media_type="application/json")
