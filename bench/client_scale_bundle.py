"""Writes the bundle bench/client.mjs sends a 64 MiB tensor through: `scale`, y = 2 * x for
x: FP32 [1, 4096, 4096] (64 MiB in, 64 MiB out), compiled at batch size 1.

usage: python3 bench/client_scale_bundle.py BUNDLE_DIR   (the bundle directory: <repo>/scale)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "export", "src"))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from hloserve_export import export_jax  # noqa: E402

out = sys.argv[1]
export_jax(
    lambda p, x: x * p["s"],
    {"s": np.float32(2.0).reshape(())},
    [jax.ShapeDtypeStruct((1, 4096, 4096), np.float32)],
    [1],
    out,
    "scale",
    input_specs=[("x", "whn")],
    output_specs=[("y", "whn")],
    description="y = 2x on a 4096x4096 FP32 tensor (bench/client.mjs)",
    reference_batch_size=1,
)
# The 128 MiB reference pair is not needed by the bench; the export already checked it.
os.unlink(os.path.join(out, "reference.safetensors"))
