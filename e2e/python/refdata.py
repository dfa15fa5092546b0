"""Reads a bundle's reference.safetensors (input.<name> / output.<name>) with numpy only."""
import json
import struct

import numpy as np

_DT = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I8": np.int8, "I16": np.int16,
       "I32": np.int32, "I64": np.int64, "U8": np.uint8, "U16": np.uint16, "U32": np.uint32,
       "U64": np.uint64, "BOOL": np.bool_}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        if t["dtype"] == "BF16":
            u16 = np.frombuffer(raw[base + a:base + b], dtype=np.uint16)
            arr = (u16.astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw[base + a:base + b], dtype=_DT[t["dtype"]])
        out[name] = arr.reshape(t["shape"])
    return out, meta


def reference(bundle_dir):
    tensors, meta = read_safetensors(f"{bundle_dir}/reference.safetensors")
    inputs = {k[len("input."):]: v for k, v in tensors.items() if k.startswith("input.")}
    outputs = {k[len("output."):]: v for k, v in tensors.items() if k.startswith("output.")}
    return inputs, outputs, meta


def rel_error(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-6)
    return float(np.max(np.abs(got - want)) / scale) if want.size else 0.0


WIRE = {np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64", np.dtype(np.float16): "FP16",
        np.dtype(np.int8): "INT8", np.dtype(np.int16): "INT16", np.dtype(np.int32): "INT32",
        np.dtype(np.int64): "INT64", np.dtype(np.uint8): "UINT8", np.dtype(np.uint16): "UINT16",
        np.dtype(np.uint32): "UINT32", np.dtype(np.uint64): "UINT64", np.dtype(np.bool_): "BOOL"}
