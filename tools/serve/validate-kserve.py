#!/usr/bin/env python3
"""Validates KServe manifests against KServe's own API model and Kubernetes' schemas.

    tools/serve/validate-kserve.py [--serve-help FILE | --serve BIN] [--self-test] MANIFEST...

KServe's kinds (ServingRuntime, ClusterServingRuntime, InferenceService, ...) are checked against
the API model classes of KServe's Python SDK (pinned in tools/serve/kserve-requirements.txt):
each class's `openapi_types` (field -> type), `attribute_map` (field -> YAML key) and the fields
its setters refuse to leave empty (required). The classes are read as source text, never imported.
Where a field's type is a Kubernetes one (V1Container, V1ObjectMeta, ...), the value is checked
with jsonschema against that definition in kubernetes-validate's strict schemas (unknown fields
refused). Refused: unknown fields, wrong types, missing required fields, an apiVersion/kind pair
KServe does not have. With --serve BIN (or --serve-help, a saved `serve --help`), every `--flag`
in a container's args must be one `serve --help` lists, and a value one of its possible values
where it lists them.

--self-test feeds broken copies of the manifests given (an unknown field, a wrong type, a missing
required field, in KServe's part and in the pod-spec part, an unknown serve flag) and fails
unless each is refused with an error at the broken place.

The environment: ${ONNXRT_CACHE_DIR:-~/.cache/onnxrt}/kserve-venv, made on the first run (python3
-m venv, pip install --no-deps of the pinned requirements) and reused while they are unchanged;
the script then runs itself in it. Exit status: 0 valid, 1 refused, 2 bad usage.
"""

import argparse
import ast
import copy
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "tools/serve/kserve-requirements.txt"
GROUP = "serving.kserve.io"


def ensure_environment() -> None:
    """Runs this script again in its pinned environment, made first if needed."""
    cache = Path(os.environ.get("ONNXRT_CACHE_DIR", Path.home() / ".cache/onnxrt"))
    venv = cache / "kserve-venv"
    python = venv / "bin/python"
    if Path(sys.prefix).resolve() == venv.resolve():
        return
    digest = hashlib.sha256(REQUIREMENTS.read_bytes() + sys.version.encode()).hexdigest()[:16]
    stamp = venv / ".requirements-hash"
    if not (python.exists() and stamp.exists() and stamp.read_text().strip() == digest):
        print(f"validate-kserve: making {venv} ({REQUIREMENTS.name})", file=sys.stderr)
        subprocess.run(["rm", "-rf", str(venv)], check=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                        "-r", str(REQUIREMENTS)], check=True)
        stamp.write_text(digest + "\n")
    os.execv(str(python), [str(python), __file__, *sys.argv[1:]])


class KserveModel:
    """KServe's API model: per class, YAML key -> (attribute, type), and the required attributes."""

    def __init__(self):
        import importlib.metadata

        dist = importlib.metadata.distribution("kserve")
        self.version = dist.version
        self.classes: dict[str, dict] = {}
        for entry in dist.files or []:
            path = entry.as_posix()
            if path.startswith("kserve/models/") and path.endswith(".py") and not path.endswith("__init__.py"):
                self.read(Path(entry.locate()).read_text())
        if not self.classes:
            sys.exit("validate-kserve: the kserve package holds no API model classes (kserve/models/*.py)")

    def read(self, source: str) -> None:
        for node in ast.parse(source).body:
            if not isinstance(node, ast.ClassDef):
                continue
            fields = {}
            for item in node.body:
                if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                    if item.targets[0].id in ("openapi_types", "attribute_map"):
                        fields[item.targets[0].id] = ast.literal_eval(item.value)
            if "openapi_types" in fields and "attribute_map" in fields:
                required = set(re.findall(r"Invalid value for `(\w+)`, must not be `None`", source))
                types, keys = fields["openapi_types"], fields["attribute_map"]
                self.classes[node.name] = {
                    "keys": {keys[a]: (a, t) for a, t in types.items()},
                    "required": {keys[a] for a in required if a in keys},
                }


class KubernetesSchemas:
    """Kubernetes' strict JSON schemas (kubernetes-validate), by the Python client's class name."""

    def __init__(self):
        import importlib_resources
        import jsonschema
        import kubernetes_validate.utils as kv

        self.version = kv.latest_version()
        folder = importlib_resources.files("kubernetes_validate").joinpath(
            f"kubernetes-json-schema/v{self.version}-local-strict")
        self.document = json.loads(folder.joinpath("_definitions.json").read_text())
        self.by_suffix: dict[str, list[str]] = {}
        for name in self.document["$defs"]:
            version, kind = name.split(".")[-2:]
            self.by_suffix.setdefault(version.capitalize() + kind, []).append(name)
        self.jsonschema = jsonschema

    def definition(self, class_name: str) -> str | None:
        names = self.by_suffix.get(class_name, [])
        for preferred in ("io.k8s.api.core.", "io.k8s.apimachinery.pkg.apis.meta."):
            for name in names:
                if name.startswith(preferred):
                    return name
        return names[0] if len(names) == 1 else None

    def errors(self, class_name: str, value, path: str) -> list[str]:
        name = self.definition(class_name)
        if name is None:
            return [f"{path}: type {class_name} is in no Kubernetes schema this checker has"]
        schema = dict(self.document, **{"$ref": f"#/$defs/{name}"})
        validator = self.jsonschema.Draft202012Validator(schema)
        return [f"{path}{''.join(f'.{p}' if isinstance(p, str) else f'[{p}]' for p in e.absolute_path)}: {e.message}"
                for e in validator.iter_errors(value)]


class Checker:
    def __init__(self, serve_help: str | None):
        self.kserve = KserveModel()
        self.kubernetes = KubernetesSchemas()
        self.flags = parse_help(serve_help) if serve_help is not None else None

    def manifest(self, document: dict, where: str) -> list[str]:
        if not isinstance(document, dict):
            return [f"{where}: a manifest is a mapping"]
        api, kind = document.get("apiVersion", ""), document.get("kind", "")
        group, _, version = str(api).partition("/")
        if group != GROUP:
            return [f"{where}: apiVersion {api!r} is not KServe's ({GROUP}/VERSION)"]
        class_name = version.capitalize() + str(kind)
        if class_name not in self.kserve.classes:
            return [f"{where}: KServe {self.kserve.version} has no {kind} in {api}"]
        errors = self.value(document, class_name, where)
        if self.flags is not None:
            errors += self.container_args(document, where)
        return errors

    def value(self, value, type_name: str, path: str) -> list[str]:
        if value is None:
            return []
        if type_name.startswith("list["):
            if not isinstance(value, list):
                return [f"{path}: expected a list ({type_name}), got {type(value).__name__}"]
            return [e for i, item in enumerate(value) for e in self.value(item, type_name[5:-1], f"{path}[{i}]")]
        if type_name.startswith("dict("):
            if not isinstance(value, dict):
                return [f"{path}: expected a mapping ({type_name}), got {type(value).__name__}"]
            inner = type_name[5:-1].split(",", 1)[1].strip()
            return [e for k, v in value.items() for e in self.value(v, inner, f"{path}.{k}")]
        simple = {"str": (str,), "bool": (bool,), "int": (int,), "float": (int, float), "datetime": (str,), "date": (str,)}
        if type_name in simple:
            ok = isinstance(value, simple[type_name]) and not (type_name in ("int", "float") and isinstance(value, bool))
            return [] if ok else [f"{path}: expected {type_name}, got {type(value).__name__} {value!r}"]
        if type_name == "object":
            return []
        if type_name in self.kserve.classes:
            return self.object(value, type_name, path)
        return self.kubernetes.errors(type_name, value, path)

    def object(self, value, class_name: str, path: str) -> list[str]:
        if not isinstance(value, dict):
            return [f"{path}: expected a mapping ({class_name}), got {type(value).__name__}"]
        known = self.kserve.classes[class_name]
        errors = [f"{path}.{key}: unknown field (KServe's {class_name} has none such)" for key in value
                  if key not in known["keys"]]
        errors += [f"{path}.{key}: required field missing ({class_name})" for key in sorted(known["required"])
                   if value.get(key) is None]
        for key, item in value.items():
            if key in known["keys"]:
                errors += self.value(item, known["keys"][key][1], f"{path}.{key}")
        return errors

    def container_args(self, document: dict, where: str) -> list[str]:
        errors = []
        for i, container in enumerate((document.get("spec") or {}).get("containers") or []):
            for j, arg in enumerate((container or {}).get("args") or []):
                if not isinstance(arg, str) or not arg.startswith("--"):
                    continue
                flag, _, value = arg.partition("=")
                at = f"{where}.spec.containers[{i}].args[{j}]"
                if flag not in self.flags:
                    errors.append(f"{at}: {flag} is not a flag of serve (serve --help)")
                elif value and self.flags[flag] and value not in self.flags[flag]:
                    errors.append(f"{at}: {flag} takes one of {self.flags[flag]}, not {value!r}")
        return errors


def parse_help(text: str) -> dict[str, list[str]]:
    """`--flag` -> its possible values (empty: any), from `serve --help`."""
    flags = {}
    for line in text.splitlines():
        found = re.match(r"\s+(?:-\w, )?(--[a-z0-9-]+)", line)
        if found:
            values = re.search(r"\[possible values: ([^\]]+)\]", line)
            flags[found.group(1)] = [v.strip() for v in values.group(1).split(",")] if values else []
    if "--model-repository" not in flags:
        sys.exit("validate-kserve: the serve help given lists no --model-repository; is it `serve --help`?")
    return flags


def load(path: Path) -> list:
    import yaml

    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def breakages(documents: list) -> list[tuple[str, str, callable]]:
    """(what, the path the error must name, how to break a copy): one per kind of error."""
    def runtime(docs):
        return next(d for d in docs if d.get("kind") in ("ServingRuntime", "ClusterServingRuntime"))

    def service(docs):
        return next(d for d in docs if d.get("kind") == "InferenceService")

    kinds = {d.get("kind") for d in documents}
    cases = []
    if kinds & {"ServingRuntime", "ClusterServingRuntime"}:
        cases += [
            ("an unknown KServe field", ".spec.supportedModelFormat",
             lambda d: runtime(d)["spec"].__setitem__("supportedModelFormat", [{"name": "onnx"}])),
            ("a wrong KServe type", ".spec.protocolVersions",
             lambda d: runtime(d)["spec"].__setitem__("protocolVersions", "v2")),
            ("a missing required KServe field", ".spec.containers", lambda d: runtime(d)["spec"].pop("containers")),
            ("an unknown pod-spec field", ".spec.containers[0].readinessProbe.httpGet",
             lambda d: runtime(d)["spec"]["containers"][0]["readinessProbe"]["httpGet"].__setitem__("paht", "/")),
            ("a wrong pod-spec type", ".spec.containers[0].ports[0].containerPort",
             lambda d: runtime(d)["spec"]["containers"][0]["ports"][0].__setitem__("containerPort", [8080])),
            ("a missing required pod-spec field", ".spec.containers[0]",
             lambda d: runtime(d)["spec"]["containers"][0].pop("name")),
            ("an unknown serve flag", ".spec.containers[0].args[0]",
             lambda d: runtime(d)["spec"]["containers"][0]["args"].__setitem__(0, "--model-repo=/mnt/models")),
        ]
    if "InferenceService" in kinds:
        cases += [
            ("a missing required field of the predictor's model", ".spec.predictor.model.modelFormat",
             lambda d: service(d)["spec"]["predictor"]["model"].pop("modelFormat")),
            ("a wrong type in the InferenceService", ".spec.predictor.model.storageUri",
             lambda d: service(d)["spec"]["predictor"]["model"].__setitem__("storageUri", {"s3": "x"})),
        ]
    return cases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifests", nargs="+", type=Path)
    parser.add_argument("--serve", help="the serve binary whose --help the container args must match")
    parser.add_argument("--serve-help", type=Path, help="a saved `serve --help`, instead of --serve")
    parser.add_argument("--self-test", action="store_true", help="also check that broken copies are refused")
    args = parser.parse_args()
    ensure_environment()

    serve_help = None
    if args.serve:
        serve_help = subprocess.run([args.serve, "--help"], capture_output=True, text=True, check=True).stdout
    elif args.serve_help:
        serve_help = args.serve_help.read_text()
    checker = Checker(serve_help)
    print(f"validate-kserve: KServe {checker.kserve.version} API model ({len(checker.kserve.classes)} classes), "
          f"Kubernetes {checker.kubernetes.version} strict schemas", file=sys.stderr)

    documents, failed = [], False
    for path in args.manifests:
        for n, document in enumerate(load(path)):
            where = f"{path.name}#{n}" if n else path.name
            errors = checker.manifest(document, where)
            for error in errors:
                print(f"validate-kserve: {error}", file=sys.stderr)
            failed |= bool(errors)
            print(f"validate-kserve: {where}: {document.get('kind')} {'refused' if errors else 'valid'}", file=sys.stderr)
            documents.append(document)
    if failed or not args.self_test:
        return 1 if failed else 0

    cases = breakages(documents)
    if args.self_test and serve_help is None:
        cases = [c for c in cases if c[0] != "an unknown serve flag"]
    missed = 0
    for what, place, breaks in cases:
        broken = copy.deepcopy(documents)
        breaks(broken)
        errors = [e for d in broken for e in checker.manifest(d, "copy")]
        hit = [e for e in errors if e.startswith("copy" + place)]
        if hit:
            print(f"validate-kserve: self-test: {what}: refused: {hit[0]}", file=sys.stderr)
        else:
            missed += 1
            print(f"validate-kserve: self-test: {what} ({place}) NOT refused; errors: {errors}", file=sys.stderr)
    print(f"validate-kserve: self-test: {len(cases) - missed} of {len(cases)} broken copies refused", file=sys.stderr)
    return 1 if missed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
