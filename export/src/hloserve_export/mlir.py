"""Reading StableHLO modules (portable artifacts or text) back: entry signature, version,
and compiling/executing them with jaxlib's in-process CPU client."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

PORTABLE_MAGIC = b"ML\xefR"


@dataclass
class TensorType:
    shape: tuple[int, ...]
    dtype: str  # MLIR element type: f32, i32, ui8, i1, bf16, complex<f32>, ...

    def __str__(self) -> str:
        return f"tensor<{'x'.join(map(str, self.shape))}{'x' if self.shape else ''}{self.dtype}>"


@dataclass
class Signature:
    inputs: list[TensorType]
    outputs: list[TensorType]


def _context():
    from jax._src.interpreters import mlir as jmlir

    return jmlir.make_ir_context()


def _parse(ctx, blob: bytes):
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo as sh

    if blob.startswith(PORTABLE_MAGIC):
        return sh.deserialize_portable_artifact(ctx, blob)
    return ir.Module.parse(blob.decode(), context=ctx)


def artifact_version(blob: bytes) -> str | None:
    """The StableHLO (VHLO) version a portable artifact was serialized to, from its producer
    string ("StableHLO_v1.15.0"); None for text modules."""
    m = re.search(rb"StableHLO_v(\d+\.\d+\.\d+)", blob[:4096])
    return m.group(1).decode() if m else None


def strip_locations(blob: bytes) -> bytes:
    """Re-serialize a portable artifact without debug locations (jax embeds source file paths and
    Python tracebacks), at the same StableHLO version, so that the bytes do not depend on where
    the exporter ran from."""
    from jaxlib.mlir.dialects import stablehlo as sh

    version = artifact_version(blob)
    if not blob.startswith(PORTABLE_MAGIC) or version is None:
        raise ValueError("not a StableHLO portable artifact")
    ctx = _context()
    with ctx:
        text = _parse(ctx, blob).operation.get_asm(enable_debug_info=False)
    out = sh.serialize_portable_artifact_str(text, version)
    if artifact_version(out) != version:
        raise ValueError("re-serialization changed the StableHLO version")
    return bytes(out)


def main_signature(blob: bytes) -> Signature:
    """Parse a module (VHLO bytecode or text) and return the types of ``@main``."""
    from jaxlib.mlir import ir

    ctx = _context()
    with ctx:
        module = _parse(ctx, blob)
        for op in module.body.operations:
            if op.operation.name != "func.func":
                continue
            if ir.StringAttr(op.attributes["sym_name"]).value != "main":
                continue
            ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)

            def conv(t) -> TensorType:
                rt = ir.RankedTensorType(t)
                return TensorType(tuple(int(d) for d in rt.shape), str(rt.element_type))

            return Signature([conv(t) for t in ft.inputs], [conv(t) for t in ft.results])
    raise ValueError("module has no func.func @main")


def count_ops(blob: bytes, op_name: str) -> int:
    """Occurrences of an op (e.g. 'stablehlo.custom_call') in the module's text form."""
    ctx = _context()
    with ctx:
        text = str(_parse(ctx, blob))
    return text.count(op_name)


def run_module(blob: bytes, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Compile a StableHLO module (portable artifact bytes or text) on jaxlib's CPU client and run
    it once. This is what hloserve's PJRT path does, minus the plugin: the bytes as written, not
    the Python function that produced them."""
    import jax
    from jax._src import xla_bridge as xb
    from jax._src.lib import _jax

    backend = xb.get_backend("cpu")
    dev = backend.devices()[0]
    exe = backend.compile_and_load(blob, _jax.DeviceList((dev,)), _jax.CompileOptions())
    bufs = [jax.device_put(np.asarray(a), dev) for a in args]
    res = exe.execute_sharded(bufs).disassemble_into_single_device_arrays()
    return [np.asarray(r[0]) for r in res]
