"""Framework-independent part of the exporter.

Given a *flat* JAX function ``f(*inputs, *weights) -> tuple(outputs)`` (one per batch size), the
ordered weights and the tensor specs, lower it with ``jax.export`` for every batch size, check the
entry signature, compute a reference, and write the bundle directory.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform as _platform
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import __version__
from .bundle import (
    ResolvedTensor,
    TensorSpec,
    batch_axis,
    coerce_specs,
    letter_dims,
    mlir_dtype,
    module_filename,
    render_manifest,
    resolve_letters,
    write_safetensors,
)
from .mlir import (
    Signature,
    TensorType,
    artifact_version,
    count_ops,
    main_signature,
    run_module,
    strip_locations,
)

MAX_STABLEHLO_VERSION = (1, 20, 0)  # what the serving plugin parses


class ExportError(RuntimeError):
    pass


@dataclass
class ExportResult:
    out_dir: str
    name: str
    batch_sizes: list[int]
    inputs: list[ResolvedTensor]
    outputs: list[ResolvedTensor]
    weight_names: list[str]
    num_parameters: int
    weights_bytes: int
    module_bytes: dict[int, int]
    reference_batch_size: int
    stablehlo_version: str | None
    files: dict[str, int] = field(default_factory=dict)  # file name -> size in bytes


def default_command() -> str:
    argv = list(sys.argv)
    if argv and argv[0].endswith("__main__.py"):
        argv = ["python", "-m", "hloserve_export", *argv[1:]]
    return " ".join(shlex.quote(a) for a in argv)


def _git_state() -> dict[str, Any]:
    """HEAD of the exporter's checkout and whether its work tree has changes (read-only git)."""
    here = os.path.dirname(os.path.abspath(__file__))

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", "--no-optional-locks", *args],
                cwd=here, capture_output=True, text=True, timeout=10,
            )  # fmt: skip
        except Exception:
            return None
        return out.stdout if out.returncode == 0 else None

    head = git("rev-parse", "HEAD")
    if not head:
        return {}
    status = git("status", "--porcelain")
    state: dict[str, Any] = {"git_commit": head.strip()}
    if status is not None:
        state["git_dirty"] = bool(status.strip())
    return state


def _versions(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    import jax
    import jaxlib

    v = {
        "python": _platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
    }
    if extra:
        v.update({str(k): str(val) for k, val in extra.items()})
    return v


def _plain(obj: Any) -> Any:
    """Plain YAML-safe types (str subclasses such as torch's TorchVersion, numpy scalars...)."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, bool) or obj is None:
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    return str(obj)


def _check_name(kind: str, name: str) -> None:
    if not name or not re.fullmatch(r"[A-Za-z0-9_.:\-]+", name):
        raise ExportError(f"bad {kind} name {name!r}")


def _tensor_type(shape: Sequence[int], dtype: Any) -> TensorType:
    return TensorType(tuple(int(d) for d in shape), mlir_dtype(dtype))


def make_reference_inputs(
    inputs: Sequence[ResolvedTensor], batch: int, seed: int
) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for t in inputs:
        shape = t.shape_at(batch)
        dt = np.dtype(t.dtype)
        if dt.kind == "f":
            out.append(rng.standard_normal(shape).astype(dt))
        elif dt.kind in "iu":
            out.append(rng.integers(0, 10, size=shape).astype(dt))
        elif dt.kind == "b":
            out.append(rng.random(shape) < 0.5)
        else:
            raise ExportError(f"cannot make a reference input of dtype {dt}")
    return out


def _close(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> tuple[bool, float]:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False, float("inf")
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    scale = max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)
    return bool(np.all(np.isfinite(a)) and diff <= atol * scale + rtol * scale), diff


def export_flat(
    fn_for_batch: Callable[[int], Callable[..., Any]],
    input_template: Sequence[Any],
    weights: Sequence[tuple[str, np.ndarray]],
    batch_sizes: Sequence[int],
    out_dir: str,
    name: str,
    input_specs: Sequence[Any] | None = None,
    output_specs: Sequence[Any] | None = None,
    *,
    description: str | None = None,
    reference_batch_size: int | None = None,
    reference_inputs: Sequence[np.ndarray] | None = None,
    reference_fn: Callable[[list[np.ndarray]], Sequence[np.ndarray]] | None = None,
    reference_tolerance: tuple[float, float] = (1e-4, 1e-5),
    seed: int = 0,
    matmul_precision: str = "highest",
    platform: str = "cpu",
    allow_custom_calls: bool = False,
    keep_locations: bool = False,
    frontend: str = "jax",
    extra_versions: Mapping[str, str] | None = None,
    provenance: Mapping[str, Any] | None = None,
    command: str | None = None,
) -> ExportResult:
    """Export and write a bundle.

    ``fn_for_batch(b)`` returns a JAX-traceable ``f(*inputs, *weights) -> tuple`` for batch
    size ``b`` (the same function for every b is fine). ``input_template`` holds one
    array/ShapeDtypeStruct per input with XLA shapes; the batch axis (given by the spec's letters,
    default XLA axis 0) is replaced by each batch size. ``reference_fn`` (optional) computes the
    outputs with the original framework, to cross-check the exported module.
    """
    import jax
    import jax.numpy as jnp

    _check_name("model", name)
    bs = sorted({int(b) for b in batch_sizes})
    if not bs or bs[0] <= 0:
        raise ExportError(f"batch sizes must be positive integers, got {batch_sizes}")

    # ---- inputs ----------------------------------------------------------------------------
    in_specs = coerce_specs(input_specs, len(input_template), "input")
    inputs: list[ResolvedTensor] = []
    for spec, tmpl in zip(in_specs, input_template):
        shape = tuple(int(d) for d in tmpl.shape)
        letters = resolve_letters(spec, len(shape))
        if batch_axis(letters) is None:
            raise ExportError(f"input {spec.name}: shape {letters!r} has no batch letter (n)")
        inputs.append(
            ResolvedTensor(spec.name, np.dtype(tmpl.dtype).name, letters, letter_dims(letters, shape))
        )

    # ---- weights -----------------------------------------------------------------------------
    wnames = [n for n, _ in weights]
    for n in wnames:
        _check_name("weight", n)
    if len(set(wnames)) != len(wnames):
        dup = sorted({n for n in wnames if wnames.count(n) > 1})
        raise ExportError(f"duplicate weight names: {dup}")
    warrays = [np.ascontiguousarray(np.asarray(a)) for _, a in weights]
    w_avals = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in warrays]
    n_in, n_w = len(inputs), len(warrays)
    n_args = n_in + n_w

    # ---- lower each batch size -----------------------------------------------------------------
    blobs: dict[int, bytes] = {}
    outputs: list[ResolvedTensor] | None = None
    out_specs: list[TensorSpec] | None = None
    versions_seen = set()
    for b in bs:
        fn = fn_for_batch(b)
        in_avals = [jax.ShapeDtypeStruct(t.shape_at(b), np.dtype(t.dtype)) for t in inputs]
        with jax.default_matmul_precision(matmul_precision):
            out_struct = jax.eval_shape(fn, *in_avals, *w_avals)
        if not isinstance(out_struct, (tuple, list)):
            raise ExportError("the flat function must return a tuple of arrays")
        if out_specs is None:
            out_specs = coerce_specs(output_specs, len(out_struct), "output")
            outputs = []
            for spec, o in zip(out_specs, out_struct):
                letters = resolve_letters(spec, len(o.shape))
                outputs.append(
                    ResolvedTensor(spec.name, np.dtype(o.dtype).name, letters, letter_dims(letters, o.shape))
                )
        assert outputs is not None
        if len(out_struct) != len(outputs):
            raise ExportError(f"batch {b}: {len(out_struct)} outputs, expected {len(outputs)}")
        for t, o in zip(outputs, out_struct):
            if tuple(o.shape) != t.shape_at(b) or np.dtype(o.dtype).name != t.dtype:
                raise ExportError(
                    f"batch {b}: output {t.name} is {o.dtype}{list(o.shape)}, expected "
                    f"{t.dtype}{list(t.shape_at(b))} (letters {t.letters!r})"
                )

        with jax.default_matmul_precision(matmul_precision):
            exp = jax.export.export(jax.jit(fn, keep_unused=True), platforms=[platform])(
                *in_avals, *w_avals
            )
        kept = tuple(exp.module_kept_var_idx)
        if kept != tuple(range(n_args)) or len(exp.in_avals) != n_args:
            dropped = sorted(set(range(n_args)) - set(kept))
            names = [inputs[i].name if i < n_in else wnames[i - n_in] for i in dropped]
            raise ExportError(f"batch {b}: jax dropped arguments {names} from the module")
        if exp.ordered_effects or exp.unordered_effects:
            raise ExportError(f"batch {b}: the function has effects (callbacks, tokens, ...)")
        if exp.nr_devices != 1:
            raise ExportError(f"batch {b}: module uses {exp.nr_devices} devices")
        blob = bytes(exp.mlir_module_serialized)
        if not keep_locations:
            blob = strip_locations(blob)

        sig = main_signature(blob)
        want_in = [_tensor_type(a.shape, a.dtype) for a in (*in_avals, *w_avals)]
        want_out = [_tensor_type(t.shape_at(b), t.dtype) for t in outputs]
        check_signature(sig, want_in, want_out, f"batch {b}")
        if not allow_custom_calls:
            n_cc = count_ops(blob, "stablehlo.custom_call")
            if n_cc:
                raise ExportError(
                    f"batch {b}: module has {n_cc} stablehlo.custom_call op(s) (platform-specific); "
                    "pass allow_custom_calls=True to accept"
                )
        ver = artifact_version(blob)
        if ver and tuple(int(x) for x in ver.split(".")) > MAX_STABLEHLO_VERSION:
            raise ExportError(f"batch {b}: StableHLO {ver} is newer than the plugin parses (1.20)")
        versions_seen.add(ver)
        blobs[b] = blob

    assert outputs is not None

    # ---- reference ----------------------------------------------------------------------------
    if reference_batch_size is None:
        larger = [b for b in bs if b > 1]
        reference_batch_size = 4 if 4 in bs else (larger[0] if larger else bs[0])
    rb = int(reference_batch_size)
    if rb not in blobs:
        raise ExportError(f"reference batch size {rb} is not compiled")
    if reference_inputs is None:
        ref_in = make_reference_inputs(inputs, rb, seed)
    else:
        ref_in = [np.asarray(a) for a in reference_inputs]
        for t, a in zip(inputs, ref_in):
            if tuple(a.shape) != t.shape_at(rb):
                raise ExportError(f"reference input {t.name}: shape {a.shape} != {t.shape_at(rb)}")
    cpu = jax.devices("cpu")[0]
    with jax.default_matmul_precision("highest"), jax.default_device(cpu):
        ref_out = jax.jit(fn_for_batch(rb))(*[jnp.asarray(a) for a in ref_in], *warrays)
    ref_out = [np.asarray(o) for o in ref_out]
    rtol, atol = reference_tolerance
    for t, o in zip(outputs, ref_out):
        if np.dtype(o.dtype).kind == "f" and not np.all(np.isfinite(o)):
            raise ExportError(f"reference output {t.name} has NaN/Inf")
    # the module bytes themselves, compiled by the XLA CPU client
    art_out = run_module(blobs[rb], [*ref_in, *warrays])
    for t, o, r in zip(outputs, art_out, ref_out):
        ok, diff = _close(o, r, rtol, atol)
        if not ok:
            raise ExportError(f"artifact output {t.name} differs from jax by {diff}")
    framework_diff = None
    if reference_fn is not None:
        fw_out = list(reference_fn(ref_in))
        framework_diff = 0.0
        for t, o, r in zip(outputs, fw_out, ref_out):
            ok, diff = _close(np.asarray(o), r, rtol * 10, atol * 10)
            framework_diff = max(framework_diff, diff)
            if not ok:
                raise ExportError(f"{frontend} output {t.name} differs from the export by {diff}")

    # ---- provenance ------------------------------------------------------------------------
    num_params = int(sum(a.size for a in warrays))
    weights_bytes = int(sum(a.nbytes for a in warrays))
    prov: dict[str, Any] = {
        "exporter": f"hloserve_export {__version__}",
        "frontend": frontend,
        "versions": _versions(extra_versions),
        "exported_at": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "command": command or default_command(),
    }
    prov.update(_git_state())
    prov.update(
        {
            "lowering_platform": platform,
            "stablehlo_version": sorted(v for v in versions_seen if v) or None,
            "matmul_precision": matmul_precision,
            "num_parameters": num_params,
            "weights_bytes": weights_bytes,
            "reference": {"batch_size": rb, "seed": seed},
        }
    )
    if isinstance(prov["stablehlo_version"], list) and len(prov["stablehlo_version"]) == 1:
        prov["stablehlo_version"] = prov["stablehlo_version"][0]
    if framework_diff is not None:
        prov["reference"][f"max_abs_diff_vs_{frontend}"] = float(f"{framework_diff:.3g}")
    if provenance:
        prov.update(provenance)

    # ---- write ------------------------------------------------------------------------------
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        if re.fullmatch(r"model(\.v\d+)?(\.b\d+)?\.mlir", f):
            os.remove(os.path.join(out_dir, f))
    files: dict[str, int] = {}
    for b, blob in blobs.items():
        fn_ = module_filename(b)
        with open(os.path.join(out_dir, fn_), "wb") as fh:
            fh.write(blob)
        files[fn_] = len(blob)
    import json

    write_safetensors(
        os.path.join(out_dir, "weights.safetensors"),
        list(zip(wnames, warrays)),
        {"argument_order": json.dumps(wnames), "format": "np"},
    )
    ref_tensors = [(f"input.{t.name}", a) for t, a in zip(inputs, ref_in)]
    ref_tensors += [(f"output.{t.name}", a) for t, a in zip(outputs, ref_out)]
    write_safetensors(
        os.path.join(out_dir, "reference.safetensors"),
        ref_tensors,
        {"batch_size": str(rb), "seed": str(seed), "matmul_precision": "highest"},
    )
    manifest = render_manifest(name, inputs, outputs, bs, description, _plain(prov))
    with open(os.path.join(out_dir, "manifest.yaml"), "w") as fh:
        fh.write(manifest)
    for f in ("weights.safetensors", "reference.safetensors", "manifest.yaml"):
        files[f] = os.path.getsize(os.path.join(out_dir, f))

    return ExportResult(
        out_dir=out_dir,
        name=name,
        batch_sizes=bs,
        inputs=inputs,
        outputs=outputs,
        weight_names=wnames,
        num_parameters=num_params,
        weights_bytes=weights_bytes,
        module_bytes={b: len(v) for b, v in blobs.items()},
        reference_batch_size=rb,
        stablehlo_version=prov["stablehlo_version"] if isinstance(prov["stablehlo_version"], str) else None,
        files=files,
    )


def check_signature(
    sig: Signature, want_in: Sequence[TensorType], want_out: Sequence[TensorType], where: str
) -> None:
    if len(sig.inputs) != len(want_in):
        raise ExportError(
            f"{where}: main takes {len(sig.inputs)} arguments, expected {len(want_in)} "
            "(inputs + weights)"
        )
    for i, (got, want) in enumerate(zip(sig.inputs, want_in)):
        if got != want:
            raise ExportError(f"{where}: main argument {i} is {got}, expected {want}")
    if len(sig.outputs) != len(want_out):
        raise ExportError(f"{where}: main returns {len(sig.outputs)} results, expected {len(want_out)}")
    for i, (got, want) in enumerate(zip(sig.outputs, want_out)):
        if got != want:
            raise ExportError(f"{where}: main result {i} is {got}, expected {want}")
