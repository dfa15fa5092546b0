"""`fno`: a small 2D Fourier neural operator (Li et al. 2020), a f32 [N,64,64,1] -> u f32 [N,64,64,1].

The input field is concatenated with its (x, y) grid coordinates, lifted to WIDTH channels,
passed through LAYERS Fourier layers ``v <- gelu(K(v) + W v)`` where K multiplies the lowest
MODES x MODES Fourier modes (both signs of the first frequency axis) by learned complex
matrices (rfft2 / irfft2 -> stablehlo.fft), and projected back to one channel.
Complex spectral weights are stored as separate real/imaginary f32 tensors.
"""

from __future__ import annotations

import os

import numpy as np

NAME = "fno"
BATCH_SIZES = (1, 4, 8)
GRID = 64
WIDTH = 16
MODES = 12
LAYERS = 4
PROJ = 64
SPEC_STD = 0.35
DESCRIPTION = (
    f"2D Fourier neural operator: {LAYERS} Fourier layers, width {WIDTH}, {MODES}x{MODES} modes, "
    f"{GRID}x{GRID} grid, NHWC a[N,{GRID},{GRID},1] -> u[N,{GRID},{GRID},1], random weights (seed 0)"
)


def init_params(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    f32 = np.float32

    def dense(cin, cout, gain=1.0):
        return {
            "kernel": (rng.standard_normal((cin, cout)) * gain * np.sqrt(1.0 / cin)).astype(f32),
            "bias": rng.uniform(-0.05, 0.05, size=(cout,)).astype(f32),
        }

    p: dict = {"lift": dense(3, WIDTH, gain=np.sqrt(2.0))}
    # spectral weights (complex, re and im each with std SPEC_STD/sqrt(2)); SPEC_STD was chosen
    # empirically so that u is O(1) (std ~1) for N(0,1) inputs.
    for i in range(LAYERS):
        layer = {"w": dense(WIDTH, WIDTH)}
        for k in ("w1", "w2"):
            for part in ("re", "im"):
                layer[f"{k}_{part}"] = (
                    rng.standard_normal((WIDTH, WIDTH, MODES, MODES)) * SPEC_STD / np.sqrt(2.0)
                ).astype(f32)
        p[f"fourier_{i}"] = layer
    p["proj_0"] = dense(WIDTH, PROJ, gain=np.sqrt(2.0))
    p["proj_1"] = dense(PROJ, 1)
    return p


def _spectral(v, layer):
    import jax.numpy as jnp
    from jax import lax

    n, h, w, _ = v.shape
    m = MODES
    vf = jnp.fft.rfft2(v, axes=(1, 2))  # [N, H, W//2+1, C] complex64
    w1 = lax.complex(layer["w1_re"], layer["w1_im"])  # [Cin, Cout, m, m]
    w2 = lax.complex(layer["w2_re"], layer["w2_im"])
    top = jnp.einsum("nxyi,ioxy->nxyo", vf[:, :m, :m, :], w1)
    bot = jnp.einsum("nxyi,ioxy->nxyo", vf[:, h - m :, :m, :], w2)
    cout = top.shape[-1]
    mid = jnp.zeros((n, h - 2 * m, m, cout), dtype=top.dtype)
    cols = jnp.concatenate([top, mid, bot], axis=1)  # [N, H, m, Cout]
    out_ft = jnp.pad(cols, ((0, 0), (0, 0), (0, w // 2 + 1 - m), (0, 0)))
    return jnp.fft.irfft2(out_ft, s=(h, w), axes=(1, 2)).astype(v.dtype)


def apply(params: dict, a):
    import jax
    import jax.numpy as jnp

    n, h, w, _ = a.shape
    ys = jnp.linspace(0.0, 1.0, h, dtype=a.dtype)
    xs = jnp.linspace(0.0, 1.0, w, dtype=a.dtype)
    gy = jnp.broadcast_to(ys[None, :, None, None], (n, h, w, 1))
    gx = jnp.broadcast_to(xs[None, None, :, None], (n, h, w, 1))
    v = jnp.concatenate([a, gx, gy], axis=-1)
    v = v @ params["lift"]["kernel"] + params["lift"]["bias"]
    for i in range(LAYERS):
        layer = params[f"fourier_{i}"]
        v = _spectral(v, layer) + v @ layer["w"]["kernel"] + layer["w"]["bias"]
        if i < LAYERS - 1:
            v = jax.nn.gelu(v)
    v = jax.nn.gelu(v @ params["proj_0"]["kernel"] + params["proj_0"]["bias"])
    return v @ params["proj_1"]["kernel"] + params["proj_1"]["bias"]


def build(out_root: str, batch_sizes=None, seed: int = 0, **kwargs):
    import jax
    import jax.numpy as jnp

    from ..jax_frontend import export_jax

    return export_jax(
        apply,
        init_params(seed),
        [jax.ShapeDtypeStruct((1, GRID, GRID, 1), jnp.float32)],
        batch_sizes or BATCH_SIZES,
        os.path.join(out_root, NAME),
        NAME,
        input_specs=[("a", "cwhn")],
        output_specs=[("u", "cwhn")],
        description=DESCRIPTION,
        seed=seed,
        provenance={
            "model": {
                "kind": "fourier_neural_operator_2d",
                "width": WIDTH,
                "modes": MODES,
                "layers": LAYERS,
                "grid": GRID,
            }
        },
        **kwargs,
    )
