"""KServe's Python ModelServer serving an hloserve bundle's batch-1 program through jax (hlo_program);
the model is the one in HLOSERVE_PEER_MODEL (peer_model).
Usage: python kserve_model.py GRPC_PORT HTTP_PORT"""
import sys

import model_config_rpc  # noqa: F401  (before kserve builds its gRPC server)
import kserve
import numpy as np
from kserve import InferOutput, InferRequest, InferResponse

import peer_model
from hlo_program import HloProgram


class HloModel(kserve.Model):
    def __init__(self):
        super().__init__(peer_model.NAME)
        self.program = HloProgram(peer_model.BUNDLE, peer_model.INPUTS)
        self.ready = True

    # perf_analyzer builds its request from the metadata: the same shapes every server reports.
    def get_input_types(self):
        return peer_model.metadata(peer_model.INPUTS)

    def get_output_types(self):
        return peer_model.metadata(peer_model.OUTPUTS)

    def predict(self, payload: InferRequest, headers=None) -> InferResponse:
        by_name = {i.name: i for i in payload.inputs}
        ys = self.program.run([by_name[t["name"]].as_numpy() for t in peer_model.INPUTS])
        outs = []
        for t, y in zip(peer_model.OUTPUTS, ys):
            out = InferOutput(name=t["name"], shape=list(y.shape), datatype=t["datatype"])
            out.set_data_from_numpy(np.ascontiguousarray(y), binary_data=True)
            outs.append(out)
        return InferResponse(model_name=self.name, infer_outputs=outs, response_id=payload.id)


if __name__ == "__main__":
    grpc_port, http_port = int(sys.argv[1]), int(sys.argv[2])
    kserve.ModelServer(grpc_port=grpc_port, http_port=http_port, workers=1).start([HloModel()])
