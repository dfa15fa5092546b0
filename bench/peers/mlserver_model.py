"""MLServer custom runtime serving an hloserve bundle's batch-1 program through jax (hlo_program);
the model is the one in HLOSERVE_PEER_MODEL (peer_model)."""
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse, ResponseOutput

import peer_model
from hlo_program import HloProgram


class HloModel(MLModel):
    async def load(self) -> bool:
        self.program = HloProgram(peer_model.BUNDLE, peer_model.INPUTS)
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        by_name = {i.name: i for i in payload.inputs}
        ys = self.program.run([NumpyCodec.decode_input(by_name[t["name"]]) for t in peer_model.INPUTS])
        # Plain Python numbers: MLServer packs a raw (binary) response with struct.pack, which
        # refused the values NumpyCodec.encode_output left after the trip from its inference worker.
        outs = [
            ResponseOutput(name=t["name"], shape=list(y.shape), datatype=t["datatype"], data=y.ravel().tolist())
            for t, y in zip(peer_model.OUTPUTS, ys)
        ]
        return InferenceResponse(model_name=self.name, outputs=outs)
