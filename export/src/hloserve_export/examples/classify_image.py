"""`classify-image`: encoded images in, top-3 labels out; a small CNN runs in between.

The executable is a CNN on f32 [N,32,32,3] NHWC in [0,1] (3x3 conv 3->16 stride 2, 3x3 conv
16->32 stride 2, ReLU, global average pool, linear 32->10). Its hooks (hooks/classify.mjs)
decode PNG or JPEG bytes in preprocess and turn logits into the top-3 CIFAR-10 labels with their
probabilities in postprocess. Clients send `image` (BYTES [N]) and receive `labels` (BYTES [N,3])
and `scores` (f32 [N,3]).
"""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np

NAME = "classify-image"
BATCH_SIZES = (1, 4, 8)
LABELS = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
DESCRIPTION = "image classifier: PNG/JPEG bytes -> top-3 CIFAR-10 labels (hooks), small CNN, random weights (seed 0)"


def init_params(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)

    def conv(cin, cout):
        std = np.sqrt(2.0 / (cin * 9))
        return {"kernel": (rng.standard_normal((3, 3, cin, cout)) * std).astype(np.float32),
                "bias": rng.uniform(-0.05, 0.05, cout).astype(np.float32)}  # fmt: skip

    return {
        "conv1": conv(3, 16),
        "conv2": conv(16, 32),
        "fc": {"kernel": (rng.standard_normal((32, 10)) * np.sqrt(1.0 / 32)).astype(np.float32),
               "bias": np.zeros(10, np.float32)},  # fmt: skip
    }


def apply(params: dict, image):
    import jax
    from jax import lax

    def conv(p, x):
        y = lax.conv_general_dilated(x, p["kernel"], (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jax.nn.relu(y + p["bias"])

    x = conv(params["conv2"], conv(params["conv1"], image))
    x = x.mean(axis=(1, 2))
    return x @ params["fc"]["kernel"] + params["fc"]["bias"]


def encode_png(pixels: np.ndarray) -> bytes:
    """8-bit RGB PNG, filter 0 on every row: enough for a reference input."""
    h, w, _ = pixels.shape
    raw = b"".join(b"\0" + pixels[y].astype(np.uint8).tobytes() for y in range(h))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def top3(logits: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    order = np.argsort(-p, axis=1, kind="stable")[:, :3]
    labels = [LABELS[j].encode() for row in order for j in row]
    return labels, np.take_along_axis(p, order, axis=1).astype(np.float32)


def build(out_root: str, batch_sizes=None, seed: int = 0, **kwargs):
    import jax
    import jax.numpy as jnp

    from ..hooks import add_client_io, bytes_tensor, client_tensor, write_client_reference
    from ..jax_frontend import export_jax

    out_dir = os.path.join(out_root, NAME)
    params = init_params(seed)
    result = export_jax(
        apply,
        params,
        [jax.ShapeDtypeStruct((1, 32, 32, 3), jnp.float32)],
        batch_sizes or BATCH_SIZES,
        out_dir,
        NAME,
        input_specs=[("image", "cwhn")],
        output_specs=[("logits", "kn")],
        description=DESCRIPTION,
        seed=seed,
        provenance={"model": {"kind": "cnn", "convs": [16, 32], "classes": len(LABELS)}},
        **kwargs,
    )
    add_client_io(
        out_dir,
        "classify.mjs",
        [client_tensor("image", "BYTES", "n")],
        [client_tensor("labels", "BYTES", "kn", {"k": 3}), client_tensor("scores", "f32", "kn", {"k": 3})],
    )
    rng = np.random.default_rng(seed + 2)
    # Smooth random images (a coarse grid upsampled), so the pixels are not pure noise.
    images = [np.kron(rng.integers(0, 256, (8, 8, 3)), np.ones((4, 4, 1))).astype(np.uint8) for _ in range(3)]
    with jax.default_matmul_precision("highest"):
        logits = np.asarray(apply(params, np.stack(images).astype(np.float32) / 255))
    labels, scores = top3(logits)
    write_client_reference(
        out_dir,
        {"image": bytes_tensor([encode_png(i) for i in images], [3])},
        {"labels": bytes_tensor(labels, [3, 3]), "scores": scores},
    )
    return result
