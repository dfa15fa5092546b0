"""`detector`: scores the four 32x32 cells of a 64x64 image, f32 [N,64,64,3] -> f32 [N,2,2].

The first stage of the `two-stage` meta example: a 3x3 conv (3->8, ReLU) and a 1x1 conv (8->1),
averaged over each cell. Random weights (seed 0): the scores are deterministic, not meaningful.
"""

from __future__ import annotations

import os

import numpy as np

NAME = "detector"
BATCH_SIZES = (1, 4, 8)
DESCRIPTION = "cell scorer for the two-stage example: 64x64x3 -> 2x2 cell scores, random weights (seed 0)"


def init_params(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "conv": {"kernel": (rng.standard_normal((3, 3, 3, 8)) * np.sqrt(2.0 / 27)).astype(np.float32),
                 "bias": rng.uniform(-0.05, 0.05, 8).astype(np.float32)},  # fmt: skip
        "score": {"kernel": (rng.standard_normal((1, 1, 8, 1)) * np.sqrt(1.0 / 8)).astype(np.float32)},
    }


def apply(params: dict, image):
    import jax
    from jax import lax

    dn = ("NHWC", "HWIO", "NHWC")
    x = jax.nn.relu(lax.conv_general_dilated(image, params["conv"]["kernel"], (1, 1), "SAME", dimension_numbers=dn)
                    + params["conv"]["bias"])  # fmt: skip
    s = lax.conv_general_dilated(x, params["score"]["kernel"], (1, 1), "SAME", dimension_numbers=dn)[..., 0]
    n = s.shape[0]
    return s.reshape(n, 2, 32, 2, 32).mean(axis=(2, 4))


def build(out_root: str, batch_sizes=None, seed: int = 0, **kwargs):
    import jax
    import jax.numpy as jnp

    from ..jax_frontend import export_jax

    return export_jax(
        apply,
        init_params(seed),
        [jax.ShapeDtypeStruct((1, 64, 64, 3), jnp.float32)],
        batch_sizes or BATCH_SIZES,
        os.path.join(out_root, NAME),
        NAME,
        input_specs=[("image", "cwhn")],
        output_specs=[("cell_scores", "whn")],
        description=DESCRIPTION,
        seed=seed,
        provenance={"model": {"kind": "cell_scorer", "cells": [2, 2]}},
        **kwargs,
    )
