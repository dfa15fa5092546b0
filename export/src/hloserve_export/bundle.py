"""Bundle writing/reading helpers: tensor specs, shape letters, safetensors, manifest.yaml.

Conventions (docs/bundle-format.md):

* manifest shape letters are column-major, batch-last: the XLA (row-major) shape is the letter
  string *reversed*. ``shape: cwhn, dims: {c: 3, w: 32, h: 32}`` is XLA ``[N, 32, 32, 3]``.
* ``n`` (or ``b``) is the batch letter.
* weights.safetensors holds XLA shapes and ``__metadata__.argument_order``.
* reference.safetensors holds ``input.<name>`` / ``output.<name>`` at wire (= XLA) shapes and
  ``__metadata__.batch_size``.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import yaml

FORMAT_VERSION = "2.0"
BATCH_LETTERS = ("n", "b")

# numpy dtype name -> (manifest token, safetensors token)
_DTYPES: dict[str, tuple[str, str]] = {
    "bool": ("bool", "BOOL"),
    "int8": ("i8", "I8"),
    "int16": ("i16", "I16"),
    "int32": ("i32", "I32"),
    "int64": ("i64", "I64"),
    "uint8": ("u8", "U8"),
    "uint16": ("u16", "U16"),
    "uint32": ("u32", "U32"),
    "uint64": ("u64", "U64"),
    "float16": ("f16", "F16"),
    "bfloat16": ("bf16", "BF16"),
    "float32": ("f32", "F32"),
    "float64": ("f64", "F64"),
}
_ST_TO_NP = {st: np_name for np_name, (_, st) in _DTYPES.items()}

# Default letters (column-major, batch-last) by rank when a spec gives none.
DEFAULT_LETTERS = {1: "n", 2: "fn", 3: "cwn", 4: "cwhn", 5: "cwhdn"}


def np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def manifest_dtype(dtype: Any) -> str:
    name = np.dtype(dtype).name
    if name not in _DTYPES:
        raise ValueError(f"dtype {name} is not supported in a bundle")
    return _DTYPES[name][0]


def mlir_dtype(dtype: Any) -> str:
    """The MLIR element type for a numpy dtype (f32, i32, ui8, i1, bf16, ...)."""
    tok = manifest_dtype(dtype)
    if tok == "bool":
        return "i1"
    if tok.startswith("u"):
        return "ui" + tok[1:]
    return tok


# --------------------------------------------------------------------------------------------
# Tensor specs
# --------------------------------------------------------------------------------------------


@dataclass
class TensorSpec:
    """A named executable tensor. ``letters`` is the manifest shape string (column-major,
    batch-last); None means "pick a default for the rank" (batch = XLA axis 0)."""

    name: str
    letters: str | None = None

    @staticmethod
    def coerce(obj: Any) -> "TensorSpec":
        if isinstance(obj, TensorSpec):
            return obj
        if isinstance(obj, str):
            return TensorSpec(obj)
        if isinstance(obj, (tuple, list)) and 1 <= len(obj) <= 2:
            return TensorSpec(obj[0], obj[1] if len(obj) == 2 else None)
        if isinstance(obj, Mapping):
            return TensorSpec(obj["name"], obj.get("shape") or obj.get("letters"))
        raise TypeError(f"cannot make a TensorSpec from {obj!r}")


def coerce_specs(specs: Iterable[Any] | None, count: int, prefix: str) -> list[TensorSpec]:
    if specs is None:
        return [TensorSpec(f"{prefix}{i}") for i in range(count)]
    out = [TensorSpec.coerce(s) for s in specs]
    if len(out) != count:
        raise ValueError(f"{len(out)} {prefix}specs given but the function has {count}")
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate tensor names: {names}")
    for n in names:
        if not n or not re.fullmatch(r"[A-Za-z0-9_.:\-]+", n):
            raise ValueError(f"bad tensor name {n!r}")
    return out


def resolve_letters(spec: TensorSpec, rank: int) -> str:
    letters = spec.letters
    if letters is None:
        if rank not in DEFAULT_LETTERS:
            raise ValueError(f"{spec.name}: give explicit shape letters for rank {rank}")
        letters = DEFAULT_LETTERS[rank]
    if len(letters) != rank:
        raise ValueError(f"{spec.name}: shape letters {letters!r} do not match rank {rank}")
    if not re.fullmatch(r"[A-Za-z]*", letters) or len(set(letters)) != len(letters):
        raise ValueError(f"{spec.name}: shape letters {letters!r} must be unique ASCII letters")
    if sum(c in BATCH_LETTERS for c in letters) > 1:
        raise ValueError(f"{spec.name}: at most one batch letter in {letters!r}")
    return letters


def batch_axis(letters: str) -> int | None:
    """XLA (row-major) index of the batch axis, or None."""
    for i, c in enumerate(letters):
        if c in BATCH_LETTERS:
            return len(letters) - 1 - i
    return None


def letter_dims(letters: str, xla_shape: Sequence[int]) -> dict[str, int]:
    """{letter: size} for the non-batch letters, in manifest (letter) order."""
    rank = len(letters)
    return {
        c: int(xla_shape[rank - 1 - i]) for i, c in enumerate(letters) if c not in BATCH_LETTERS
    }


def xla_shape(letters: str, dims: Mapping[str, int], batch: int) -> tuple[int, ...]:
    return tuple(batch if c in BATCH_LETTERS else int(dims[c]) for c in reversed(letters))


@dataclass
class ResolvedTensor:
    name: str
    dtype: str  # numpy dtype name
    letters: str
    dims: dict[str, int]

    def manifest_entry(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dtype": manifest_dtype(self.dtype),
            "shape": self.letters,
            "dims": dict(self.dims),
        }

    def shape_at(self, batch: int) -> tuple[int, ...]:
        return xla_shape(self.letters, self.dims, batch)


# --------------------------------------------------------------------------------------------
# safetensors (own writer: deterministic order, bf16 via ml_dtypes, no extra dependency)
# --------------------------------------------------------------------------------------------


def write_safetensors(
    path: str, tensors: Sequence[tuple[str, np.ndarray]], metadata: Mapping[str, str] | None = None
) -> None:
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    blobs = []
    for name, arr in tensors:
        arr = np.ascontiguousarray(arr)
        dt = arr.dtype.name
        if dt not in _DTYPES:
            raise ValueError(f"{name}: dtype {dt} not supported")
        data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {
            "dtype": _DTYPES[dt][1],
            "shape": [int(d) for d in arr.shape],
            "data_offsets": [offset, offset + len(data)],
        }
        offset += len(data)
        blobs.append(data)
    hbytes = json.dumps(header, separators=(",", ":")).encode()
    hbytes += b" " * ((8 - len(hbytes) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + hlen])
    meta = header.pop("__metadata__", {}) or {}
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        dt = np_dtype(_ST_TO_NP[info["dtype"]]).newbyteorder("<")
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(raw[base + b : base + e], dtype=dt).reshape(info["shape"])
    return out, meta


# --------------------------------------------------------------------------------------------
# manifest.yaml
# --------------------------------------------------------------------------------------------


class _FlowMap(dict):
    pass


class _FlowList(list):
    pass


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(
    _FlowMap, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v.items(), flow_style=True)
)
_Dumper.add_representer(
    _FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True)
)


def _flow_tensor(entry: Mapping[str, Any]) -> _FlowMap:
    e = _FlowMap(entry)
    e["dims"] = _FlowMap(entry["dims"])
    return e


def render_manifest(
    name: str,
    inputs: Sequence[ResolvedTensor],
    outputs: Sequence[ResolvedTensor],
    batch_sizes: Sequence[int],
    description: str | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> str:
    doc: dict[str, Any] = {"format_version": FORMAT_VERSION, "name": name}
    if description:
        doc["description"] = description
    doc["kind"] = "model"
    doc["executable_inputs"] = [_flow_tensor(t.manifest_entry()) for t in inputs]
    doc["executable_outputs"] = [_flow_tensor(t.manifest_entry()) for t in outputs]
    doc["batching"] = _FlowMap({"compiled_batch_sizes": _FlowList(int(b) for b in batch_sizes)})
    if provenance:
        doc["provenance"] = dict(provenance)
    text = yaml.dump(
        doc, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=False, default_flow_style=None
    )
    # format_version must stay a string ("2.0"); the dumper quotes it already.
    return "# hloserve bundle manifest (docs/bundle-format.md)\n" + text


def load_manifest(path: str) -> dict[str, Any]:
    with open(path) as f:
        return yaml.safe_load(f)


def module_filename(batch: int | None) -> str:
    return "model.mlir" if batch is None else f"model.b{batch}.mlir"
