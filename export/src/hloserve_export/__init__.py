"""hloserve_export: write hloserve / ReactantServer-format (2.0) StableHLO bundles from JAX
functions and PyTorch modules. See docs/export.md."""

__version__ = "0.1.0"

from .bundle import TensorSpec, read_safetensors, write_safetensors  # noqa: E402
from .core import ExportError, ExportResult, export_flat  # noqa: E402
from .jax_frontend import export_jax, flatten_params  # noqa: E402
from .verify import VerifyReport, verify_bundle  # noqa: E402


def export_torch(*args, **kwargs):
    """PyTorch front end (needs torch + torchax); see torch_frontend.export_torch."""
    from .torch_frontend import export_torch as _export_torch

    return _export_torch(*args, **kwargs)


__all__ = [
    "ExportError",
    "ExportResult",
    "TensorSpec",
    "export_flat",
    "export_jax",
    "export_torch",
    "flatten_params",
    "read_safetensors",
    "verify_bundle",
    "VerifyReport",
    "write_safetensors",
]
