"""An hloserve bundle's batch-1 StableHLO program (model.b1.mlir) run through jax's own PJRT CPU
client: the exact program hloserve serves, compiled by jax's XLA, its weights uploaded once. The
peers' model classes (mlserver_model.py, kserve_model.py) call `run` per request, one request's
inputs (batch 1) in manifest order."""
import json
import struct
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_platforms", "cpu")
from jax._src.lib import xla_client as xc  # noqa: E402
import jax.extend.backend as jb  # noqa: E402

_DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64, "U8": np.uint8}
# KServe V2 datatypes of the executable tensors a bundle may declare.
WIRE_DTYPES = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
}


def read_safetensors(path: Path):
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    meta = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        tensors[name] = np.frombuffer(raw[8 + n + a : 8 + n + b], dtype=_DTYPES[t["dtype"]]).reshape(t["shape"])
    order = json.loads(meta["argument_order"]) if "argument_order" in meta else list(tensors)
    return tensors, order


class HloProgram:
    def __init__(self, bundle: Path, inputs: list, batch: int = 1):
        self.backend = jb.get_backend()
        device = self.backend.devices()[0]
        code = (bundle / f"model.b{batch}.mlir").read_bytes()
        self.exe = self.backend.compile_and_load(code, xc.DeviceList((device,)), xc.CompileOptions())
        tensors, order = read_safetensors(bundle / "weights.safetensors")
        self.weights = [jax.device_put(tensors[k], device) for k in order]
        self.device = device
        self.dtypes = [WIRE_DTYPES[t["datatype"]] for t in inputs]

    def run(self, xs: list) -> list:
        args = [jax.device_put(np.ascontiguousarray(x, dtype=d), self.device) for x, d in zip(xs, self.dtypes)]
        return [np.asarray(y) for y in self.exe.execute([*args, *self.weights])]


if __name__ == "__main__":
    import sys
    import time

    import peer_model

    # Self-timing: python hlo_program.py [RUNS] [BATCH] (the servers always run batch 1).
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    p = HloProgram(peer_model.BUNDLE, peer_model.INPUTS, batch)
    xs = [np.full([batch, *t["shape"][1:]], 0.5, WIRE_DTYPES[t["datatype"]]) for t in peer_model.INPUTS]
    y = p.run(xs)[0]
    t, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        p.run(xs)
    us, cpu_us = (time.perf_counter() - t) * 1e6 / n, (time.process_time() - cpu) * 1e6 / n
    print(json.dumps({"shape": list(y.shape), "us_per_run": us, "cpu_us_per_run": cpu_us, "y0": float(y.flat[0])}))
