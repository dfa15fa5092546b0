"""Adds Triton's ModelConfig RPC to a peer's gRPC server, so perf_analyzer can drive it.

perf_analyzer asks for `inference.GRPCInferenceService/ModelConfig` (a Triton extension of the
KServe V2 protocol) before it sends a request, to learn max_batch_size; MLServer and KServe's
ModelServer answer "Method not found". This module wraps grpc.aio.server so the server they create
also answers that one method with a fixed config for the served model (peer_model): max_batch_size
32 (as hloserve reports), its inputs and outputs without the batch axis, so perf_analyzer sends the
same batch-1 request to every server. Imported before the peer builds its server; nothing else is
changed.
"""
import grpc
from grpc import aio

import peer_model


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _varint((number << 3) | wire) + payload


def _bytes(number: int, value: bytes) -> bytes:
    return _field(number, 2, _varint(len(value)) + value)


def _int(number: int, value: int) -> bytes:
    return _field(number, 0, _varint(value))


def _tensor(t: dict, dims_field: int) -> bytes:
    packed = b"".join(_varint(d) for d in t["shape"][1:])
    return _bytes(1, t["name"].encode()) + _int(2, t["tritonType"]) + _bytes(dims_field, packed)


# ModelConfigResponse{config: ModelConfig{name 1, platform 2, max_batch_size 4, input 5, output 6}};
# ModelInput.dims is field 4, ModelOutput.dims field 3.
CONFIG = _bytes(
    1,
    _bytes(1, peer_model.NAME.encode())
    + _bytes(2, b"jax")
    + _int(4, 32)
    + b"".join(_bytes(5, _tensor(t, 4)) for t in peer_model.INPUTS)
    + b"".join(_bytes(6, _tensor(t, 3)) for t in peer_model.OUTPUTS),
)

_METHOD = "/inference.GRPCInferenceService/ModelConfig"


async def _answer(_request, _context):
    return CONFIG


class _ModelConfigHandler(grpc.GenericRpcHandler):
    def service(self, handler_call_details):
        if handler_call_details.method != _METHOD:
            return None
        return grpc.unary_unary_rpc_method_handler(_answer)


_make_server = aio.server


def _server(*args, **kwargs):
    server = _make_server(*args, **kwargs)
    server.add_generic_rpc_handlers((_ModelConfigHandler(),))
    return server


aio.server = _server
