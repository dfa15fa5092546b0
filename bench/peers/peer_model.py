"""The model a peer serves, as bench/peers/run.mjs read it from the bundle's manifest
(model-spec.mjs): JSON in HLOSERVE_PEER_MODEL with name, bundle, inputs and outputs (each name,
datatype, tritonType, shape with the batch axis as -1). Without it: examples/models/mlp."""
import json
import os
from pathlib import Path

_MLP = {
    "name": "mlp",
    "bundle": str(Path(__file__).resolve().parents[2] / "examples" / "models" / "mlp"),
    "inputs": [{"name": "x", "datatype": "FP32", "tritonType": 11, "shape": [-1, 784]}],
    "outputs": [{"name": "logits", "datatype": "FP32", "tritonType": 11, "shape": [-1, 10]}],
}

SPEC = json.loads(os.environ["HLOSERVE_PEER_MODEL"]) if "HLOSERVE_PEER_MODEL" in os.environ else _MLP
NAME: str = SPEC["name"]
BUNDLE = Path(SPEC["bundle"])
INPUTS: list = SPEC["inputs"]
OUTPUTS: list = SPEC["outputs"]


def metadata(tensors: list) -> list:
    """The V2 metadata of tensors: perf_analyzer builds its request from it."""
    return [{"name": t["name"], "datatype": t["datatype"], "shape": t["shape"]} for t in tensors]
