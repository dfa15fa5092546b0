"""MLServer custom runtime serving an hloserve bundle's batch-1 program through jax (hlo_program)."""
from pathlib import Path

from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse

from hlo_program import HloProgram


class HloModel(MLModel):
    async def load(self) -> bool:
        self.program = HloProgram(Path(self.settings.parameters.uri))
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        x = NumpyCodec.decode_input(payload.inputs[0])
        y = self.program.run(x)
        return InferenceResponse(model_name=self.name, outputs=[NumpyCodec.encode_output("logits", y)])
