"""The example models shipped in examples/models/ (regenerated with `python -m hloserve_export`)."""

from __future__ import annotations

from typing import Any

from . import classify_image, detector, fno, grader, mlp, resnet, two_stage

# two-stage calls detector and resnet, so it comes after them.
EXAMPLES: dict[str, Any] = {
    "mlp": mlp,
    "resnet": resnet,
    "fno": fno,
    "grader": grader,
    "classify-image": classify_image,
    "detector": detector,
    "two-stage": two_stage,
}


def build(name: str, out_root: str, batch_sizes=None, **kwargs):
    mod = EXAMPLES[name]
    return mod.build(out_root, batch_sizes=batch_sizes, **kwargs)
