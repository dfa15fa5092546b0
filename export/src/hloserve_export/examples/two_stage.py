"""`two-stage`: a meta model. `detector` scores the cells of a 64x64 image, the hook
(hooks/two_stage.mjs) crops the two best 32x32 cells, and `resnet` classifies each crop.

Clients send `image` f32 [N,64,64,3] and receive `boxes` i32 [N,2,2] (top-left y, x of each
crop) and `labels` i32 [N,2] (the resnet class of each crop). Needs the `detector` and `resnet`
bundles in the same repository.
"""

from __future__ import annotations

import os

import numpy as np

NAME = "two-stage"
CALLS = ("detector", "resnet")
DESCRIPTION = "meta model: detector finds the two best cells, JS crops them, resnet classifies each"


def pipeline(image: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The hook's pipeline in numpy + jax, for the committed client reference."""
    import jax

    from . import detector, resnet

    with jax.default_matmul_precision("highest"):
        scores = np.asarray(detector.apply(detector.init_params(seed), image))
        n = image.shape[0]
        boxes = np.zeros((n, 2, 2), np.int32)
        crops = []
        for i in range(n):
            s = scores[i].reshape(-1)
            best = sorted(range(4), key=lambda c: (-s[c], c))[:2]
            for j, cell in enumerate(best):
                y0, x0 = (cell >> 1) * 32, (cell & 1) * 32
                boxes[i, j] = (y0, x0)
                crops.append(image[i, y0 : y0 + 32, x0 : x0 + 32])
        logits = np.asarray(resnet.jax_apply(resnet.jax_params(seed), np.stack(crops)))
    return boxes, logits.argmax(axis=1).astype(np.int32).reshape(n, 2)


def build(out_root: str, batch_sizes=None, seed: int = 0, **kwargs):
    from ..hooks import client_tensor, write_client_reference, write_meta_bundle

    out_dir = os.path.join(out_root, NAME)
    write_meta_bundle(
        out_dir,
        NAME,
        CALLS,
        "two_stage.mjs",
        [client_tensor("image", "f32", "cwhn", {"c": 3, "w": 64, "h": 64})],
        [client_tensor("boxes", "i32", "crn", {"c": 2, "r": 2}), client_tensor("labels", "i32", "rn", {"r": 2})],
        DESCRIPTION,
        {"exporter": "hloserve_export", "calls": list(CALLS)},
    )
    image = np.random.default_rng(seed + 3).uniform(0, 1, (2, 64, 64, 3)).astype(np.float32)
    boxes, labels = pipeline(image, seed)
    write_client_reference(out_dir, {"image": image}, {"boxes": boxes, "labels": labels})
    return None
