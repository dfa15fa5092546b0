"""`mlp`: an MLP classifier, x f32 [N,784] -> logits f32 [N,10] (784-512-256-128-10, ReLU)."""

from __future__ import annotations

import os

import numpy as np

NAME = "mlp"
BATCH_SIZES = (1, 4, 8, 16, 32)
SIZES = (784, 512, 256, 128, 10)
DESCRIPTION = "MLP classifier 784-512-256-128-10 (ReLU), random He-initialised weights (seed 0)"


def init_params(seed: int = 0, sizes=SIZES) -> dict:
    """He-normal hidden layers, Glorot-normal logits layer, small uniform biases (numpy PCG64, so
    the values do not depend on the jax version)."""
    rng = np.random.default_rng(seed)
    params = {}
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        last = i == len(sizes) - 2
        std = np.sqrt(2.0 / (a + b)) if last else np.sqrt(2.0 / a)
        params[f"dense_{i}"] = {
            "kernel": (rng.standard_normal((a, b)) * std).astype(np.float32),
            "bias": rng.uniform(-0.05, 0.05, size=(b,)).astype(np.float32),
        }
    return params


def apply(params: dict, x):
    import jax

    n = len(params)
    for i in range(n):
        p = params[f"dense_{i}"]
        x = x @ p["kernel"] + p["bias"]
        if i < n - 1:
            x = jax.nn.relu(x)
    return x


def build(out_root: str, batch_sizes=None, seed: int = 0, **kwargs):
    import jax
    import jax.numpy as jnp

    from ..jax_frontend import export_jax

    return export_jax(
        apply,
        init_params(seed),
        [jax.ShapeDtypeStruct((1, SIZES[0]), jnp.float32)],
        batch_sizes or BATCH_SIZES,
        os.path.join(out_root, NAME),
        NAME,
        input_specs=[("x", "fn")],
        output_specs=[("logits", "kn")],
        description=DESCRIPTION,
        seed=seed,
        provenance={"model": {"layers": list(SIZES), "activation": "relu", "init": "he_normal"}},
        **kwargs,
    )
