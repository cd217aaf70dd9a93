#!/usr/bin/env python3
"""The checker's own logic, without a server: request building for the three clients, the bitwise
comparison, the error expectations, the samples, and (with ONNXRT_CLI and ONNXRT_REPOSITORY set)
the reference path through the onnxrt CLI.

    python test_check_oip.py            (the client environment's python, clients-env.sh)
"""

import os
import struct
import sys
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from tritonclient.utils import InferenceServerException

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_oip  # noqa: E402


class Samples(unittest.TestCase):
    def test_deterministic_distinct_and_shaped_as_the_models_take_them(self):
        for model in check_oip.MODELS:
            a, b = check_oip.sample(model, 3), check_oip.sample(model, 3)
            self.assertEqual(a.keys(), b.keys())
            for name in a:
                self.assertEqual(a[name].tobytes(), b[name].tobytes(), f"{model} {name}")
        self.assertNotEqual(check_oip.sample("ppocr_cls", 0)["x"].tobytes(), check_oip.sample("ppocr_cls", 1)["x"].tobytes())
        self.assertEqual(check_oip.sample("ppocr_det", 1)["x"].shape, (1, 3, 96, 64))
        self.assertEqual(check_oip.sample("ppocr_rec", 0)["x"].shape, (1, 3, 48, 320))
        vad = check_oip.sample("silero_vad", 0)
        self.assertEqual((vad["input"].shape, vad["state"].shape, vad["sr"].shape, vad["sr"].dtype),
                         ((1, 576), (2, 1, 128), (), np.dtype(np.int64)))


class Comparison(unittest.TestCase):
    def test_one_ulp_a_dtype_or_a_shape_is_a_difference(self):
        want = np.arange(6, dtype=np.float32).reshape(2, 3)
        self.assertEqual(check_oip.bitwise(want.copy(), want), (True, ""))
        ulp = want.copy()
        ulp[1, 2] = np.nextafter(ulp[1, 2], np.float32(10))
        ok, why = check_oip.bitwise(ulp, want)
        self.assertFalse(ok)
        self.assertIn("1 of 6 elements differ", why)
        self.assertFalse(check_oip.bitwise(want.astype(np.float64), want)[0])
        self.assertFalse(check_oip.bitwise(want.reshape(3, 2), want)[0])
        self.assertFalse(check_oip.bitwise(None, want)[0])
        # -0.0 == 0.0 for numpy, not for the bytes
        self.assertFalse(check_oip.bitwise(np.array([-0.0], np.float32), np.array([0.0], np.float32))[0])

    def test_cli_file_names_match_the_cli(self):
        # cli/src/run/show.rs file_name_for's own test cases
        self.assertEqual(check_oip.cli_file_name("logits:0/a"), "logits_0_a.npy")
        self.assertEqual(check_oip.cli_file_name("../x"), "_x.npy")
        self.assertEqual(check_oip.cli_file_name("save_infer_model/scale_0.tmp_1"), "save_infer_model_scale_0.tmp_1.npy")


class Requests(unittest.TestCase):
    arrays = {"x": np.array([[0.1, -2.5e-8, 3.0]], np.float32), "sr": np.array(16000, np.int64)}

    def test_http_json_sends_every_float_exactly(self):
        json_inputs = check_oip.Client("http-json", "127.0.0.1:1").inputs(self.arrays)
        x, sr = (t._get_tensor() for t in json_inputs)
        self.assertEqual((x["name"], x["datatype"], x["shape"]), ("x", "FP32", [1, 3]))
        self.assertNotIn("parameters", x)
        self.assertEqual(np.array(x["data"], np.float32).tobytes(), self.arrays["x"].tobytes())
        self.assertEqual((sr["datatype"], sr["shape"], sr["data"]), ("INT64", [], [16000]))

    def test_http_binary_sends_the_raw_bytes(self):
        x, sr = check_oip.Client("http-binary", "127.0.0.1:1").inputs(self.arrays)
        self.assertEqual(x._get_tensor()["parameters"], {"binary_data_size": 12})
        self.assertEqual(x._get_binary_data(), self.arrays["x"].tobytes())
        self.assertEqual(sr._get_binary_data(), struct.pack("<q", 16000))

    def test_grpc_sends_raw_contents(self):
        x, sr = check_oip.Client("grpc", "127.0.0.1:1").inputs(self.arrays)
        self.assertEqual((x._get_tensor().datatype, list(x._get_tensor().shape)), ("FP32", [1, 3]))
        self.assertEqual(x._get_content(), self.arrays["x"].tobytes())
        self.assertEqual((list(sr._get_tensor().shape), sr._get_content()), ([], struct.pack("<q", 16000)))

    def test_wrong_requests_are_built_as_asked(self):
        client = check_oip.Client("http-json", "127.0.0.1:1")
        (x,) = client.inputs({"x": np.zeros((1, 4, 48, 192), np.float32)})
        self.assertEqual(x._get_tensor()["shape"], [1, 4, 48, 192])
        (state,) = client.inputs({"state": np.zeros((2, 1, 128), np.float64)})
        self.assertEqual(state._get_tensor()["datatype"], "FP64")

    def test_a_declared_shape_the_data_does_not_fill(self):
        x = np.zeros((1, 3, 2, 2), np.float32)
        (json_x,) = check_oip.Client("http-json", "127.0.0.1:1").inputs({"x": x}, shapes={"x": [1, 3, 2, 1]})
        self.assertEqual((json_x._get_tensor()["shape"], len(json_x._get_tensor()["data"])), ([1, 3, 2, 1], 12))
        (binary_x,) = check_oip.Client("http-binary", "127.0.0.1:1").inputs({"x": x}, shapes={"x": [1, 3, 2, 1]})
        self.assertEqual((binary_x._get_tensor()["shape"], len(binary_x._get_binary_data())), ([1, 3, 2, 1], 48))
        (grpc_x,) = check_oip.Client("grpc", "127.0.0.1:1").inputs({"x": x}, shapes={"x": [1, 3, 2, 1]})
        self.assertEqual((list(grpc_x._get_tensor().shape), len(grpc_x._get_content())), ([1, 3, 2, 1], 48))

    def test_requested_outputs(self):
        http = check_oip.Client("http-json", "127.0.0.1:1").outputs(["output"])
        self.assertEqual(http[0]._get_tensor(), {"name": "output", "parameters": {"binary_data": False}})
        binary = check_oip.Client("http-binary", "127.0.0.1:1").outputs(["output"])
        self.assertEqual(binary[0]._get_tensor(), {"name": "output", "parameters": {"binary_data": True}})
        self.assertEqual(check_oip.Client("grpc", "127.0.0.1:1").outputs(["output"])[0]._get_tensor().name, "output")


class Errors(unittest.TestCase):
    def check(self, kind, status, message, *patterns):
        def call():
            raise InferenceServerException(message, status=status)

        return check_oip.expect_error(SimpleNamespace(kind=kind), call, *patterns)()

    def test_a_client_error_naming_the_problem_passes(self):
        self.assertTrue(self.check("http-json", "400", "input `state`: expected FP32, got FP64", r"\bstate\b", r"FP64")[0])
        self.assertTrue(self.check("grpc", "StatusCode.NOT_FOUND", "no model `m`", r"\bm\b")[0])

    def test_a_server_error_or_a_vague_message_fails(self):
        self.assertFalse(self.check("http-json", "500", "input `state`: FP64", r"\bstate\b")[0])
        self.assertFalse(self.check("grpc", "StatusCode.INTERNAL", "input `state`: FP64", r"\bstate\b")[0])
        self.assertFalse(self.check("http-json", "400", "Unexpected input data type", r"\bstate\b")[0])
        self.assertFalse(check_oip.expect_error(SimpleNamespace(kind="grpc"), lambda: None)()[0])


@unittest.skipUnless(os.environ.get("ONNXRT_CLI") and os.environ.get("ONNXRT_REPOSITORY"),
                     "set ONNXRT_CLI and ONNXRT_REPOSITORY (a make_repository.py folder) to run the CLI")
class References(unittest.TestCase):
    def test_single_runs_are_repeatable_and_shaped_as_the_model_says(self):
        repository = Path(os.environ["ONNXRT_REPOSITORY"])
        models = [m for m in check_oip.MODELS if (repository / m / "model.onnx").exists()]
        self.assertTrue(models, f"none of {check_oip.MODELS} in {repository}")
        io = {m: check_oip.model_io(repository / m / "model.onnx") for m in models}
        with tempfile.TemporaryDirectory() as work:
            args = SimpleNamespace(work=Path(work), samples=2, repository=repository, models=models,
                                   onnxrt=Path(os.environ["ONNXRT_CLI"]))
            first = check_oip.references(args, io)
            args.work = Path(work) / "again"
            second = check_oip.references(args, io)
        self.assertEqual(len(first), 2 * len(models))
        for key, outputs in first.items():
            model = key[0]
            self.assertEqual(sorted(outputs), sorted(n for n, _, _ in io[model]["outputs"]))
            for name, array in outputs.items():
                self.assertEqual(array.dtype, np.float32, f"{key} {name}")
                self.assertEqual(array.tobytes(), second[key][name].tobytes(), f"{key} {name}")
        shapes = {("ppocr_cls", 0, "save_infer_model/scale_0.tmp_1"): (1, 2),
                  ("ppocr_det", 1, "sigmoid_0.tmp_0"): (1, 1, 96, 64),
                  ("ppocr_rec", 0, "softmax_11.tmp_0"): (1, 40, 6625),
                  ("ppocr_rec", 1, "softmax_11.tmp_0"): (1, 20, 6625),
                  ("silero_vad", 0, "stateN"): (2, 1, 128)}
        for (model, index, name), shape in shapes.items():
            if model in models:
                self.assertEqual(first[(model, index)][name].shape, shape, f"{model} {name}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
