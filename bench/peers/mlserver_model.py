"""MLServer custom runtime serving an hloserve bundle's batch-1 program through jax (hlo_program)."""
from pathlib import Path

from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse, ResponseOutput

from hlo_program import HloProgram


class HloModel(MLModel):
    async def load(self) -> bool:
        self.program = HloProgram(Path(self.settings.parameters.uri))
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        x = NumpyCodec.decode_input(payload.inputs[0])
        y = self.program.run(x)
        # Plain Python floats: MLServer packs a raw (binary) response with struct.pack, which
        # refused the values NumpyCodec.encode_output left after the trip from its inference worker.
        out = ResponseOutput(name="logits", shape=list(y.shape), datatype="FP32", data=y.ravel().tolist())
        return InferenceResponse(model_name=self.name, outputs=[out])
