"""`resnet`: a small ResNet (no batch norm) for 32x32x3 NHWC images -> 10 logits.

stem 3x3 conv (3->40) + 3 stages x 2 basic blocks (40, 80, 160 channels; stride 2 at stages 2
and 3, 1x1 projection shortcuts) + global average pool + linear. ~1.08M parameters.

The weights are generated with numpy (PCG64, fixed seed) in PyTorch layout (OIHW), so the
PyTorch module (exported through torch.export + torchax, the default) and the pure-JAX twin
(``--frontend jax``, for machines without torch) compute the same function with the same weights.
Without batch norm there is no running-statistics state to fold; the second conv of each residual
branch is scaled down (Fixup-style) so activations stay O(1).
"""

from __future__ import annotations

import os
from collections import OrderedDict

import numpy as np

NAME = "resnet"
BATCH_SIZES = (1, 4, 8, 16, 32)
WIDTHS = (40, 80, 160)
BLOCKS_PER_STAGE = 2
NUM_CLASSES = 10
DESCRIPTION = (
    "ResNet-style CNN (no BN): 3x3 stem + 3 stages x 2 basic blocks (40/80/160 ch), "
    "NHWC 32x32x3 -> 10 logits, random He-initialised weights (seed 0)"
)


def _blocks():
    """(prefix, cin, cout, stride) per residual block."""
    out = []
    cin = WIDTHS[0]
    for s, w in enumerate(WIDTHS):
        for k in range(BLOCKS_PER_STAGE):
            stride = 2 if (s > 0 and k == 0) else 1
            out.append((f"layers.{s * BLOCKS_PER_STAGE + k}", cin, w, stride))
            cin = w
    return out


def init_weights(seed: int = 0) -> "OrderedDict[str, np.ndarray]":
    """Weights in PyTorch layout and parameter-registration order."""
    rng = np.random.default_rng(seed)
    n_blocks = len(_blocks())
    w: OrderedDict[str, np.ndarray] = OrderedDict()

    def conv(name, cin, cout, k, gain=1.0):
        std = gain * np.sqrt(2.0 / (cin * k * k))
        w[f"{name}.weight"] = (rng.standard_normal((cout, cin, k, k)) * std).astype(np.float32)
        w[f"{name}.bias"] = rng.uniform(-0.05, 0.05, size=(cout,)).astype(np.float32)

    conv("stem", 3, WIDTHS[0], 3)
    for prefix, cin, cout, stride in _blocks():
        conv(f"{prefix}.conv1", cin, cout, 3)
        conv(f"{prefix}.conv2", cout, cout, 3, gain=n_blocks**-0.5)
        if stride != 1 or cin != cout:
            conv(f"{prefix}.shortcut", cin, cout, 1, gain=0.5**0.5)
    fan_in = WIDTHS[-1]
    w["fc.weight"] = (rng.standard_normal((NUM_CLASSES, fan_in)) * np.sqrt(2.0 / fan_in)).astype(
        np.float32
    )
    w["fc.bias"] = rng.uniform(-0.05, 0.05, size=(NUM_CLASSES,)).astype(np.float32)
    return w


def num_parameters() -> int:
    return int(sum(a.size for a in init_weights().values()))


# ---------------------------------------------------------------------------------------------
# PyTorch module
# ---------------------------------------------------------------------------------------------


def torch_module(seed: int = 0):
    import torch
    from torch import nn
    from torch.nn import functional as F

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1)
            self.shortcut = nn.Conv2d(cin, cout, 1, stride) if (stride != 1 or cin != cout) else None

        def forward(self, x):
            y = self.conv2(F.relu(self.conv1(x)))
            s = x if self.shortcut is None else self.shortcut(x)
            return F.relu(s + y)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, WIDTHS[0], 3, 1, 1)
            self.layers = nn.ModuleList([Block(ci, co, st) for _, ci, co, st in _blocks()])
            self.fc = nn.Linear(WIDTHS[-1], NUM_CLASSES)

        def forward(self, image):  # image: [N, 32, 32, 3] (NHWC)
            x = image.permute(0, 3, 1, 2)
            x = F.relu(self.stem(x))
            for blk in self.layers:
                x = blk(x)
            return self.fc(x.mean(dim=(2, 3)))

    m = ResNet()
    sd = OrderedDict((k, torch.from_numpy(v.copy())) for k, v in init_weights(seed).items())
    m.load_state_dict(sd, strict=True)
    assert list(m.state_dict().keys()) == list(sd.keys())
    return m.eval()


# ---------------------------------------------------------------------------------------------
# JAX twin
# ---------------------------------------------------------------------------------------------


def jax_params(seed: int = 0) -> dict:
    """Nested dict so that flatten_params names match the torch names ("layers.0.conv1.weight")."""
    tree: dict = {}
    for name, arr in init_weights(seed).items():
        node = tree
        *path, leaf = name.split(".")
        for p in path:
            node = node.setdefault(p, {})
        node[leaf] = arr
    return tree


def jax_apply(params: dict, image):
    import jax
    from jax import lax

    def conv(p, x, stride, pad):
        y = lax.conv_general_dilated(
            x, p["weight"], (stride, stride), [(pad, pad), (pad, pad)],
            dimension_numbers=("NHWC", "OIHW", "NHWC"),
        )  # fmt: skip
        return y + p["bias"]

    x = jax.nn.relu(conv(params["stem"], image, 1, 1))
    for prefix, cin, cout, stride in _blocks():
        p = params["layers"][prefix.split(".")[1]]
        y = conv(p["conv2"], jax.nn.relu(conv(p["conv1"], x, stride, 1)), 1, 1)
        s = conv(p["shortcut"], x, stride, 0) if "shortcut" in p else x
        x = jax.nn.relu(s + y)
    x = x.mean(axis=(1, 2))
    return x @ params["fc"]["weight"].T + params["fc"]["bias"]


def build(out_root: str, batch_sizes=None, seed: int = 0, frontend: str | None = None, **kwargs):
    """frontend: "torch" (default when torch+torchax import) or "jax"."""
    if frontend is None:
        try:
            import torch  # noqa: F401
            import torchax  # noqa: F401

            frontend = "torch"
        except ImportError:
            frontend = "jax"
    common = dict(
        input_specs=[("image", "cwhn")],
        output_specs=[("logits", "kn")],
        description=DESCRIPTION,
        seed=seed,
        provenance={
            "model": {
                "widths": list(WIDTHS),
                "blocks_per_stage": BLOCKS_PER_STAGE,
                "batchnorm": "none",
                "init": "he_normal (numpy PCG64), residual conv2 scaled by 1/sqrt(6)",
            }
        },
        **kwargs,
    )
    out_dir = os.path.join(out_root, NAME)
    bs = batch_sizes or BATCH_SIZES
    if frontend == "torch":
        import torch

        from ..torch_frontend import export_torch

        example = torch.zeros((1, 32, 32, 3), dtype=torch.float32)
        return export_torch(torch_module(seed), [example], bs, out_dir, NAME, **common)
    if frontend == "jax":
        import jax
        import jax.numpy as jnp

        from ..jax_frontend import export_jax

        return export_jax(
            jax_apply, jax_params(seed), [jax.ShapeDtypeStruct((1, 32, 32, 3), jnp.float32)],
            bs, out_dir, NAME, **common,
        )  # fmt: skip
    raise ValueError(f"unknown frontend {frontend!r}")
