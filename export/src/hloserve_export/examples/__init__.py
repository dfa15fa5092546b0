"""The example models shipped in examples/models/ (regenerated with `python -m hloserve_export`)."""

from __future__ import annotations

from typing import Any

from . import fno, mlp, resnet

EXAMPLES: dict[str, Any] = {"mlp": mlp, "resnet": resnet, "fno": fno}


def build(name: str, out_root: str, batch_sizes=None, **kwargs):
    mod = EXAMPLES[name]
    return mod.build(out_root, batch_sizes=batch_sizes, **kwargs)
