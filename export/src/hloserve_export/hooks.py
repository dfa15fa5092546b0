"""Bundles with code around the executable: client tensors, a hooks module, meta models.

``add_client_io`` turns an exported model bundle into one whose clients send and receive other
tensors than the executable takes (a ``model.mjs`` converts between them); ``write_meta_bundle``
writes a ``kind: meta`` bundle whose ``run`` hook calls other models. ``write_client_reference``
stores request/response pairs at the client's level (``client-reference.json``), so the whole
pipeline, hooks included, can be checked against them.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
from typing import Any, Mapping, Sequence

import numpy as np
import yaml

from .bundle import FORMAT_VERSION, _Dumper, _FlowMap

HOOKS_DIR = os.path.join(os.path.dirname(__file__), "examples", "hooks")
CLIENT_REFERENCE_FILE = "client-reference.json"


def client_tensor(name: str, dtype: str, letters: str, dims: Mapping[str, int] | None = None) -> _FlowMap:
    entry = _FlowMap({"name": name, "dtype": dtype, "shape": letters})
    if dims:
        entry["dims"] = _FlowMap(dims)
    return entry


def _dump(doc: Mapping[str, Any]) -> str:
    text = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=100, default_flow_style=None)
    return "# hloserve bundle manifest (docs/bundle-format.md)\n" + text


def add_client_io(
    bundle_dir: str,
    hooks_file: str,
    client_inputs: Sequence[Mapping[str, Any]] | None,
    client_outputs: Sequence[Mapping[str, Any]] | None,
) -> None:
    """Adds client_inputs / client_outputs after executable_outputs and copies the hooks module."""
    path = os.path.join(bundle_dir, "manifest.yaml")
    with open(path) as f:
        doc = yaml.safe_load(f)
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key in ("executable_inputs", "executable_outputs"):
            value = [_FlowMap({**e, "dims": _FlowMap(e["dims"])} if "dims" in e else e) for e in value]
        elif key == "batching":
            value = _FlowMap(value)
        out[key] = value
        if key == "executable_outputs":
            if client_inputs:
                out["client_inputs"] = list(client_inputs)
            if client_outputs:
                out["client_outputs"] = list(client_outputs)
    with open(path, "w") as f:
        f.write(_dump(out))
    shutil.copyfile(os.path.join(HOOKS_DIR, hooks_file), os.path.join(bundle_dir, "model.mjs"))


def write_meta_bundle(
    out_dir: str,
    name: str,
    calls: Sequence[str],
    hooks_file: str,
    client_inputs: Sequence[Mapping[str, Any]],
    client_outputs: Sequence[Mapping[str, Any]],
    description: str,
    provenance: Mapping[str, Any] | None = None,
) -> None:
    os.makedirs(out_dir, exist_ok=True)
    doc: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "name": name,
        "description": description,
        "kind": "meta",
        "meta": {"calls": list(calls)},
        "client_inputs": list(client_inputs),
        "client_outputs": list(client_outputs),
    }
    if provenance:
        doc["provenance"] = dict(provenance)
    with open(os.path.join(out_dir, "manifest.yaml"), "w") as f:
        f.write(_dump(doc))
    shutil.copyfile(os.path.join(HOOKS_DIR, hooks_file), os.path.join(out_dir, "model.mjs"))


def _wire(name: str, value: Any) -> dict[str, Any]:
    if isinstance(value, list):  # BYTES: a flat list of bytes objects with a shape
        items, shape = value
        return {"name": name, "datatype": "BYTES", "shape": list(shape),
                "data_b64": [base64.b64encode(b).decode() for b in items]}  # fmt: skip
    arr = np.ascontiguousarray(value)
    datatype = {"float32": "FP32", "int32": "INT32", "int64": "INT64", "uint8": "UINT8"}[arr.dtype.name]
    # Raw little-endian bytes, as KServe's binary extension carries them.
    raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
    return {"name": name, "datatype": datatype, "shape": list(arr.shape), "raw_b64": base64.b64encode(raw).decode()}


def bytes_tensor(items: Sequence[bytes], shape: Sequence[int]) -> list:
    return [list(items), list(shape)]


def write_client_reference(
    bundle_dir: str,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    tolerance: float = 1e-4,
) -> None:
    """One request at the client's level and the response expected for it (hooks included)."""
    doc = {
        "inputs": [_wire(k, v) for k, v in inputs.items()],
        "outputs": [_wire(k, v) for k, v in outputs.items()],
        "tolerance": tolerance,
    }
    with open(os.path.join(bundle_dir, CLIENT_REFERENCE_FILE), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
