"""Check a bundle directory from its files alone: manifest, weights, module signatures, and
(optionally) that compiling the module bytes reproduces reference.safetensors."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .bundle import (
    BATCH_LETTERS,
    ResolvedTensor,
    load_manifest,
    mlir_dtype,
    module_filename,
    read_safetensors,
)
from .core import ExportError, _close, check_signature
from .mlir import PORTABLE_MAGIC, TensorType, artifact_version, main_signature, run_module

_DTYPE_TOKENS = {
    "bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
}  # fmt: skip


@dataclass
class VerifyReport:
    name: str
    batch_sizes: list[int]
    num_weights: int
    num_parameters: int
    stablehlo_versions: dict[int, str | None] = field(default_factory=dict)
    reference_batch_size: int | None = None
    reference_max_abs_diff: float | None = None

    def summary(self) -> str:
        s = (
            f"{self.name}: OK, batch sizes {self.batch_sizes}, {self.num_weights} weight tensors, "
            f"{self.num_parameters} parameters, StableHLO {sorted(set(map(str, self.stablehlo_versions.values())))}"
        )
        if self.reference_batch_size is not None:
            s += (
                f", reference @b{self.reference_batch_size} reproduced "
                f"(max |diff| {self.reference_max_abs_diff:.3g})"
            )
        return s


def _tensors(entries: list[dict[str, Any]], where: str) -> list[ResolvedTensor]:
    out = []
    for e in entries:
        letters = e["shape"]
        dims = {str(k): int(v) for k, v in (e.get("dims") or {}).items()}
        for c in letters:
            if c not in BATCH_LETTERS and c not in dims:
                raise ExportError(f"{where} {e['name']}: letter {c!r} has no dims entry")
            if c not in BATCH_LETTERS and dims[c] <= 0:
                raise ExportError(f"{where} {e['name']}: variable dims are not checked here")
        if e["dtype"] not in _DTYPE_TOKENS:
            raise ExportError(f"{where} {e['name']}: dtype {e['dtype']!r}")
        out.append(ResolvedTensor(e["name"], _DTYPE_TOKENS[e["dtype"]], letters, dims))
    return out


def verify_bundle(
    path: str, run_reference: bool = True, rtol: float = 1e-4, atol: float = 1e-5
) -> VerifyReport:
    m = load_manifest(os.path.join(path, "manifest.yaml"))
    if str(m.get("format_version")) not in ("2.0", "2"):
        raise ExportError(f"format_version {m.get('format_version')!r}")
    if m.get("kind", "model") != "model":
        raise ExportError("only kind: model bundles are checked")
    inputs = _tensors(m["executable_inputs"], "input")
    outputs = _tensors(m["executable_outputs"], "output")
    bs = [int(b) for b in (m.get("batching") or {}).get("compiled_batch_sizes") or []]

    weights: dict[str, np.ndarray] = {}
    order: list[str] = []
    wpath = os.path.join(path, "weights.safetensors")
    if os.path.exists(wpath):
        weights, meta = read_safetensors(wpath)
        if "argument_order" not in meta:
            raise ExportError("weights.safetensors has no __metadata__.argument_order")
        order = json.loads(meta["argument_order"])
        missing = [n for n in order if n not in weights]
        if missing:
            raise ExportError(f"argument_order names missing tensors: {missing}")
    warrays = [weights[n] for n in order]

    report = VerifyReport(
        name=os.path.basename(os.path.abspath(path)),
        batch_sizes=bs,
        num_weights=len(order),
        num_parameters=int(sum(a.size for a in warrays)),
    )
    keys: list[int | None] = bs if bs else [None]
    blobs: dict[int | None, bytes] = {}
    for b in keys:
        f = os.path.join(path, module_filename(b))
        if not os.path.exists(f):
            raise ExportError(f"missing {module_filename(b)}")
        with open(f, "rb") as fh:
            blob = fh.read()
        if not blob.startswith(PORTABLE_MAGIC) and b"func" not in blob[:100000]:
            raise ExportError(f"{module_filename(b)} is neither VHLO bytecode nor MLIR text")
        sig = main_signature(blob)
        bb = b if b is not None else 1
        want_in = [TensorType(t.shape_at(bb), mlir_dtype(t.dtype)) for t in inputs]
        want_in += [TensorType(tuple(a.shape), mlir_dtype(a.dtype)) for a in warrays]
        want_out = [TensorType(t.shape_at(bb), mlir_dtype(t.dtype)) for t in outputs]
        if b is None:  # batch-agnostic module: only check arity
            if len(sig.inputs) != len(want_in):
                raise ExportError(f"main takes {len(sig.inputs)} args, expected {len(want_in)}")
        else:
            check_signature(sig, want_in, want_out, module_filename(b))
        report.stablehlo_versions[bb] = artifact_version(blob)
        blobs[b] = blob

    rpath = os.path.join(path, "reference.safetensors")
    if run_reference and os.path.exists(rpath):
        ref, meta = read_safetensors(rpath)
        rb = int(meta.get("batch_size", "0"))
        blob = blobs.get(rb, blobs.get(None))
        if blob is None:
            raise ExportError(f"reference batch size {rb} has no module")
        args = []
        for t in inputs:
            a = ref[f"input.{t.name}"]
            if tuple(a.shape) != t.shape_at(rb):
                raise ExportError(f"reference input.{t.name} shape {a.shape} != {t.shape_at(rb)}")
            args.append(a)
        got = run_module(blob, [*args, *warrays])
        worst = 0.0
        for t, g in zip(outputs, got):
            want = ref[f"output.{t.name}"]
            ok, diff = _close(g, want, rtol, atol)
            worst = max(worst, diff)
            if not ok:
                raise ExportError(f"output {t.name} differs from the reference by {diff}")
        report.reference_batch_size = rb
        report.reference_max_abs_diff = worst
    return report
