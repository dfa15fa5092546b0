import os

import numpy as np
import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

torch = pytest.importorskip("torch")
pytest.importorskip("torchax")

from hloserve_export import export_torch, read_safetensors, verify_bundle  # noqa: E402
from hloserve_export.bundle import load_manifest  # noqa: E402
from hloserve_export.mlir import main_signature  # noqa: E402


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, image):  # NHWC
        x = torch.relu(self.conv(image.permute(0, 3, 1, 2)))
        return self.fc(x.mean(dim=(2, 3)))


def test_export_torch_tiny(tmp_path):
    torch.manual_seed(0)
    m = Tiny()
    out = str(tmp_path / "tiny_torch")
    res = export_torch(
        m,
        [torch.zeros(1, 6, 6, 3)],
        [1, 3],
        out,
        "tiny_torch",
        input_specs=[("image", "cwhn")],
        output_specs=[("logits", "kn")],
        reference_batch_size=3,
    )
    assert res.weight_names == ["conv.weight", "conv.bias", "fc.weight", "fc.bias"]
    man = load_manifest(os.path.join(out, "manifest.yaml"))
    assert man["provenance"]["frontend"] == "torch"
    assert man["provenance"]["versions"]["torch"] == str(torch.__version__)
    # inputs first, then weights (torchax itself puts the weights first)
    sig = main_signature(open(os.path.join(out, "model.b3.mlir"), "rb").read())
    assert [t.shape for t in sig.inputs] == [(3, 6, 6, 3), (4, 3, 3, 3), (4,), (5, 4), (5,)]
    assert [t.shape for t in sig.outputs] == [(3, 5)]
    ref, meta = read_safetensors(os.path.join(out, "reference.safetensors"))
    with torch.no_grad():
        want = m(torch.from_numpy(np.array(ref["input.image"]))).numpy()
    np.testing.assert_allclose(ref["output.logits"], want, rtol=1e-4, atol=1e-5)
    assert verify_bundle(out).reference_batch_size == 3
