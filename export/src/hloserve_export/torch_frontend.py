"""PyTorch front end: nn.Module -> torch.export -> torchax (jax) -> jax.export -> bundle.

torchax's own ``exported_program_to_stablehlo`` produces ``main(weights..., inputs...)``; hloserve
needs ``main(inputs..., weights...)``. So we take the raw jax function from
``torchax.export.exported_program_to_jax(ep, export_raw=True)`` (``func(states, inputs)``), wrap it
as ``g(*inputs, *weights)`` and lower ``g`` with ``jax.export`` ourselves, once per batch size
(each batch size is a separate static ``torch.export``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .core import ExportError, ExportResult, export_flat


def _to_numpy(t: Any) -> np.ndarray:
    import torch

    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _with_batch(t: Any, b: int) -> Any:
    """Resize axis 0 of an example tensor to b (repeat/trim), keeping values deterministic."""
    import torch

    if t.shape[0] == b:
        return t
    reps = -(-b // t.shape[0])
    return torch.cat([t] * reps, dim=0)[:b].contiguous()


def torch_to_jax(module: Any, example_inputs: Sequence[Any]):
    """torch.export + torchax: returns (weight_names, weight_arrays, func) where
    ``func(weights_list, inputs_tuple)`` is a JAX-traceable function."""
    import torch
    import torchax
    import torchax.export

    torchax.default_env()  # registers the aten -> jax lowerings
    module = module.eval()
    with torch.no_grad():
        ep = torch.export.export(module, tuple(example_inputs))
    names, states, func = torchax.export.exported_program_to_jax(ep, export_raw=True)
    names = list(names)
    lifted = list(getattr(ep.graph_signature, "lifted_tensor_constants", []) or [])
    if len(states) != len(names):
        names += [f"constant.{n}" for n in lifted]
    if len(states) != len(names):
        raise ExportError(f"torchax returned {len(states)} states for {len(names)} names")
    if ep.graph_signature.buffers_to_mutate:
        raise ExportError(
            f"module mutates buffers {list(ep.graph_signature.buffers_to_mutate.values())}; "
            "export it in inference mode"
        )
    arrays = [_to_numpy(s) for s in states]
    return names, arrays, func


def export_torch(
    module: Any,
    example_inputs: Sequence[Any],
    batch_sizes: Sequence[int],
    out_dir: str,
    name: str,
    input_specs: Sequence[Any] | None = None,
    output_specs: Sequence[Any] | None = None,
    **kwargs: Any,
) -> ExportResult:
    """Export a PyTorch ``nn.Module`` (in eval mode) to a bundle.

    ``example_inputs``: torch tensors with the batch on axis 0 (any size; they are resized to each
    batch size). Input/output specs as for :func:`hloserve_export.export_jax`; the letters describe
    the torch (row-major) shapes reversed, e.g. an NHWC image ``[N,32,32,3]`` is ``cwhn``.
    The module is cross-checked against torch on the reference input.
    """
    import jax
    import torch
    import torchax

    module = module.eval()
    per_batch: dict[int, Any] = {}
    names0: list[str] | None = None
    arrays0: list[np.ndarray] | None = None
    for b in sorted({int(x) for x in batch_sizes}):
        ex = [_with_batch(t, b) for t in example_inputs]
        names, arrays, func = torch_to_jax(module, ex)
        if names0 is None:
            names0, arrays0 = names, arrays
        elif names != names0 or any(
            a.shape != c.shape or not np.array_equal(a, c) for a, c in zip(arrays, arrays0)
        ):
            raise ExportError(f"batch {b}: torch.export produced different weights")
        per_batch[b] = func
    assert names0 is not None and arrays0 is not None
    n_in = len(example_inputs)

    def fn_for_batch(b: int):
        func = per_batch[b]

        def flat(*args):
            res = func(list(args[n_in:]), tuple(args[:n_in]))
            return tuple(res)

        return flat

    def reference_fn(inputs: list[np.ndarray]) -> list[np.ndarray]:
        with torch.no_grad():
            out = module(*[torch.from_numpy(np.array(a)) for a in inputs])
        if isinstance(out, torch.Tensor):
            out = (out,)
        return [_to_numpy(o) for o in out]

    tmpl = [jax.ShapeDtypeStruct(tuple(t.shape), _to_numpy(t[:1]).dtype) for t in example_inputs]
    extra = {"torch": torch.__version__, "torchax": getattr(torchax, "__version__", "?")}
    return export_flat(
        fn_for_batch,
        tmpl,
        list(zip(names0, arrays0)),
        batch_sizes,
        out_dir,
        name,
        input_specs,
        output_specs,
        reference_fn=reference_fn,
        frontend="torch",
        extra_versions=extra,
        **kwargs,
    )
