"""KServe's Python ModelServer serving an hloserve bundle's batch-1 program through jax (hlo_program).
Usage: python kserve_model.py BUNDLE_DIR GRPC_PORT HTTP_PORT"""
import sys
from pathlib import Path

import model_config_rpc  # noqa: F401  (before kserve builds its gRPC server)
import kserve
import numpy as np
from kserve import InferOutput, InferRequest, InferResponse

from hlo_program import HloProgram


class HloModel(kserve.Model):
    def __init__(self, name: str, bundle: Path):
        super().__init__(name)
        self.program = HloProgram(bundle)
        self.ready = True

    # perf_analyzer builds its request from the metadata: the same shapes every server reports.
    def get_input_types(self):
        return [{"name": "x", "datatype": "FP32", "shape": [-1, 784]}]

    def get_output_types(self):
        return [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}]

    def predict(self, payload: InferRequest, headers=None) -> InferResponse:
        x = payload.inputs[0].as_numpy()
        y = self.program.run(x)
        out = InferOutput(name="logits", shape=list(y.shape), datatype="FP32")
        out.set_data_from_numpy(np.ascontiguousarray(y, dtype=np.float32), binary_data=True)
        return InferResponse(model_name=self.name, infer_outputs=[out], response_id=payload.id)


if __name__ == "__main__":
    bundle, grpc_port, http_port = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    kserve.ModelServer(grpc_port=grpc_port, http_port=http_port, workers=1).start([HloModel("mlp", bundle)])
