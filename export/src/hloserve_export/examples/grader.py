"""`grader`: CORAL ordinal regression, features f32 [N,16] -> 4 cumulative logits f32 [N,4].

A small MLP (16-32, ReLU) feeds one shared weight vector plus 4 ordered biases: logit_k is the
log-odds that the grade exceeds k (Cao et al., CORAL). The bundle's postprocess hook
(hooks/grader.mjs) turns the logits into the grade (0..4, with an early break) and the
probabilities; clients receive `grade` and `probs`.
"""

from __future__ import annotations

import os

import numpy as np

NAME = "grader"
BATCH_SIZES = (1, 4, 16)
FEATURES = 16
HIDDEN = 32
THRESHOLDS = 4
DESCRIPTION = "CORAL ordinal grader: 16 features -> grade 0..4 (postprocess hook), random weights (seed 0)"


def init_params(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "hidden": {
            "kernel": (rng.standard_normal((FEATURES, HIDDEN)) * np.sqrt(2.0 / FEATURES)).astype(np.float32),
            "bias": np.zeros(HIDDEN, np.float32),
        },
        "coral": {
            "w": (rng.standard_normal((HIDDEN, 1)) * np.sqrt(1.0 / HIDDEN)).astype(np.float32),
            # Ordered thresholds, so P(grade > k) falls with k as CORAL requires.
            "b": np.array([1.5, 0.5, -0.5, -1.5], np.float32),
        },
    }


def apply(params: dict, x):
    import jax

    h = jax.nn.relu(x @ params["hidden"]["kernel"] + params["hidden"]["bias"])
    return h @ params["coral"]["w"] + params["coral"]["b"]


def grade(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The hook's rule in numpy, for the committed client reference."""
    probs = (1 / (1 + np.exp(-logits.astype(np.float64)))).astype(np.float32)
    passed = probs > 0.5
    # Leading run of passed thresholds: stop at the first one not passed.
    grades = np.argmin(np.concatenate([passed, np.zeros((len(passed), 1), bool)], axis=1), axis=1)
    return grades.astype(np.int32), probs


def build(out_root: str, batch_sizes=None, seed: int = 0, **kwargs):
    import jax
    import jax.numpy as jnp

    from ..hooks import add_client_io, client_tensor, write_client_reference
    from ..jax_frontend import export_jax

    out_dir = os.path.join(out_root, NAME)
    params = init_params(seed)
    result = export_jax(
        apply,
        params,
        [jax.ShapeDtypeStruct((1, FEATURES), jnp.float32)],
        batch_sizes or BATCH_SIZES,
        out_dir,
        NAME,
        input_specs=[("features", "fn")],
        output_specs=[("logits", "kn")],
        description=DESCRIPTION,
        seed=seed,
        provenance={"model": {"kind": "coral", "features": FEATURES, "hidden": HIDDEN, "thresholds": THRESHOLDS}},
        **kwargs,
    )
    add_client_io(
        out_dir,
        "grader.mjs",
        None,
        [client_tensor("grade", "i32", "n"), client_tensor("probs", "f32", "kn", {"k": THRESHOLDS})],
    )
    x = np.random.default_rng(seed + 1).standard_normal((4, FEATURES)).astype(np.float32) * 2
    with jax.default_matmul_precision("highest"):
        logits = np.asarray(apply(params, x))
    g, p = grade(logits)
    write_client_reference(out_dir, {"features": x}, {"grade": g, "probs": p})
    return result
