"""JAX front end: ``export_jax(fn, params, ...)`` for ``fn(params, *inputs)``."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .core import ExportError, ExportResult, export_flat


def _key_str(k: Any) -> str:
    import jax

    tu = jax.tree_util
    if isinstance(k, tu.DictKey):
        return str(k.key)
    if isinstance(k, tu.SequenceKey):
        return str(k.idx)
    if isinstance(k, tu.GetAttrKey):
        return str(k.name)
    if isinstance(k, tu.FlattenedIndexKey):
        return str(k.key)
    return str(k).strip(".[]'\"")


def flatten_params(params: Any, strip_prefix: str | None = None) -> tuple[list[str], list[np.ndarray], Any]:
    """Flatten a params pytree into (names, arrays, treedef). Names are the pytree path joined with
    '.', e.g. {"dense_0": {"kernel": ...}} -> "dense_0.kernel"; a flax ``{"params": ...}``
    wrapper can be dropped with ``strip_prefix="params."``."""
    import jax

    leaves_with_path, treedef = jax.tree_util.tree_flatten_with_path(params)
    names, arrays = [], []
    for path, leaf in leaves_with_path:
        name = ".".join(_key_str(k) for k in path) or "weight"
        if strip_prefix and name.startswith(strip_prefix):
            name = name[len(strip_prefix) :]
        names.append(name)
        arrays.append(np.asarray(leaf))
    return names, arrays, treedef


def export_jax(
    fn: Any,
    params: Any,
    example_inputs_spec: Sequence[Any],
    batch_sizes: Sequence[int],
    out_dir: str,
    name: str,
    input_specs: Sequence[Any] | None = None,
    output_specs: Sequence[Any] | None = None,
    *,
    strip_prefix: str | None = None,
    **kwargs: Any,
) -> ExportResult:
    """Export ``fn(params, *inputs)`` to a bundle in ``out_dir``.

    * ``params``: any pytree of arrays (dicts, flax variables, ...); each leaf becomes a named
      weight tensor (see :func:`flatten_params`) and a trailing argument of ``main``.
    * ``example_inputs_spec``: one ``jax.ShapeDtypeStruct`` (or array) per input with its XLA
      (row-major) shape; the batch axis is replaced by each batch size.
    * ``input_specs`` / ``output_specs``: names, ``(name, letters)`` pairs or
      ``{"name":..., "shape": letters}``; letters default by rank (``fn``, ``cwhn``...).
      ``fn`` may return an array, a tuple/list, or a dict (ordered by ``output_specs`` names,
      else by sorted keys).
    * other keyword arguments go to :func:`hloserve_export.core.export_flat` (description,
      reference_batch_size, seed, matmul_precision, provenance, command, ...).
    """
    import jax

    names, arrays, treedef = flatten_params(params, strip_prefix)
    n_in = len(example_inputs_spec)

    # Determine how outputs are ordered (and default names for dict outputs).
    tmpl = [jax.ShapeDtypeStruct(tuple(s.shape), s.dtype) for s in example_inputs_spec]
    p_avals = jax.tree_util.tree_unflatten(
        treedef, [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays]
    )
    out_struct = jax.eval_shape(fn, p_avals, *tmpl)
    dict_keys: list[str] | None = None
    if isinstance(out_struct, Mapping):
        keys = list(out_struct.keys())
        if output_specs is None:
            dict_keys = sorted(keys)
            output_specs = dict_keys
        else:
            from .bundle import TensorSpec

            dict_keys = [TensorSpec.coerce(s).name for s in output_specs]
            if sorted(dict_keys) != sorted(keys):
                raise ExportError(f"output_specs {dict_keys} do not match the output keys {keys}")

    def flat_fn(*args):
        ins, ws = args[:n_in], args[n_in:]
        out = fn(jax.tree_util.tree_unflatten(treedef, list(ws)), *ins)
        if dict_keys is not None:
            return tuple(out[k] for k in dict_keys)
        if isinstance(out, (tuple, list)) or not hasattr(out, "shape"):
            return tuple(jax.tree_util.tree_leaves(out))
        return (out,)

    return export_flat(
        lambda b: flat_fn,
        tmpl,
        list(zip(names, arrays)),
        batch_sizes,
        out_dir,
        name,
        input_specs,
        output_specs,
        frontend=kwargs.pop("frontend", "jax"),
        **kwargs,
    )
