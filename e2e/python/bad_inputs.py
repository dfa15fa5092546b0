"""Sends malformed requests to a running hloserve over gRPC (raw stubs, so the client library
cannot fix them up) and HTTP, checks each gets the expected status, and that a valid request still
succeeds after every one. Prints one JSON report.

usage: bad_inputs.py GRPC_URL HTTP_URL MODEL MAX_RECV_BYTES [MAX_JSON_BYTES]
"""
import json
import os
import struct
import sys
import urllib.error
import urllib.request
import uuid

import grpc
import numpy as np
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pbg

grpc_url, http_url, model, max_recv = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
max_json = int(sys.argv[5]) if len(sys.argv) > 5 else max_recv
channel = grpc.insecure_channel(grpc_url, options=[("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)])
stub = pbg.GRPCInferenceServiceStub(channel)
md = stub.ModelMetadata(pb.ModelMetadataRequest(name=model))
inp = md.inputs[0]
out_name = md.outputs[0].name
shape = [1 if d < 0 else d for d in inp.shape]
n = int(np.prod(shape))
assert inp.datatype == "FP32", "the suite drives an FP32 model"
good_bytes = np.random.default_rng(0).standard_normal(n).astype(np.float32).tobytes()
results = []


def tensor(name=None, datatype=None, shp=None):
    t = pb.ModelInferRequest().InferInputTensor()
    t.name = inp.name if name is None else name
    t.datatype = inp.datatype if datatype is None else datatype
    t.shape.extend(shape if shp is None else shp)
    return t


def request(inputs=None, raw=None, outputs=(), name=model):
    r = pb.ModelInferRequest(model_name=name)
    r.inputs.extend([tensor()] if inputs is None else inputs)
    r.raw_input_contents.extend([good_bytes] if raw is None else raw)
    for o in outputs:
        r.outputs.add().name = o
    return r


def valid_still_works():
    r = stub.ModelInfer(request(), timeout=30)
    return len(r.raw_output_contents) >= 1


def grpc_case(label, expected, fn):
    try:
        fn()
        got = "OK"
    except grpc.RpcError as e:
        got = e.code().name
    ok_after = valid_still_works()
    results.append({"proto": "grpc", "case": label, "expected": expected, "got": got, "ok": got == expected and ok_after})


def infer(req, **kw):
    return lambda: stub.ModelInfer(req, **kw)


def with_param(t, key, value):
    p = t.parameters[key]
    if isinstance(value, str):
        p.string_param = value
    else:
        p.int64_param = value
    return t


# --- gRPC ---
grpc_case("unknown model", "NOT_FOUND", infer(request(name="no-such-model")))
grpc_case("empty model name", "INVALID_ARGUMENT", infer(request(name="")))
grpc_case("wrong datatype FP64", "INVALID_ARGUMENT", infer(request(inputs=[tensor(datatype="FP64")], raw=[good_bytes * 2])))
grpc_case("unknown datatype", "INVALID_ARGUMENT", infer(request(inputs=[tensor(datatype="FP33")])))
grpc_case("wrong rank", "INVALID_ARGUMENT", infer(request(inputs=[tensor(shp=shape + [1])])))
grpc_case("wrong fixed extent", "INVALID_ARGUMENT", infer(request(inputs=[tensor(shp=[shape[0]] + [d + 1 for d in shape[1:]])])))
grpc_case("negative extent", "INVALID_ARGUMENT", infer(request(inputs=[tensor(shp=[-1] + shape[1:])])))
grpc_case("missing input", "INVALID_ARGUMENT", infer(request(inputs=[], raw=[])))
grpc_case("unknown input name", "INVALID_ARGUMENT", infer(request(inputs=[tensor(name="nope")])))
grpc_case("duplicate input", "INVALID_ARGUMENT", infer(request(inputs=[tensor(), tensor()], raw=[good_bytes, good_bytes])))
grpc_case("unknown requested output", "INVALID_ARGUMENT", infer(request(outputs=["nope"])))
grpc_case("duplicate requested output", "INVALID_ARGUMENT", infer(request(outputs=[out_name, out_name])))
grpc_case("truncated raw data", "INVALID_ARGUMENT", infer(request(raw=[good_bytes[:-3]])))
grpc_case("raw data too long", "INVALID_ARGUMENT", infer(request(raw=[good_bytes + b"\0\0\0\0"])))
grpc_case("more raw entries than inputs", "INVALID_ARGUMENT", infer(request(raw=[good_bytes, good_bytes])))
grpc_case("no data at all", "INVALID_ARGUMENT", infer(request(raw=[])))


def typed_and_raw():
    t = tensor()
    t.contents.fp32_contents.extend([0.0] * n)
    return stub.ModelInfer(request(inputs=[t]))


grpc_case("typed contents and raw together", "INVALID_ARGUMENT", typed_and_raw)


def wrong_typed_field():
    t = tensor()
    t.contents.int_contents.extend([0] * n)
    return stub.ModelInfer(request(inputs=[t], raw=[]))


grpc_case("typed contents in the wrong field", "INVALID_ARGUMENT", wrong_typed_field)


def typed_count():
    t = tensor()
    t.contents.fp32_contents.extend([0.0] * (n + 1))
    return stub.ModelInfer(request(inputs=[t], raw=[]))


grpc_case("typed contents count mismatch", "INVALID_ARGUMENT", typed_count)
max_batch = stub.ModelConfig(pb.ModelConfigRequest(name=model)).config.max_batch_size
grpc_case("batch larger than any compiled size", "INVALID_ARGUMENT", infer(request(inputs=[tensor(shp=[max_batch + 1] + shape[1:])], raw=[good_bytes * (max_batch + 1)])))
grpc_case("absurd shape (overflow)", "INVALID_ARGUMENT", infer(request(inputs=[tensor(shp=[2**40] + shape[1:])])))
grpc_case("shm: unregistered region", "FAILED_PRECONDITION", infer(request(inputs=[with_param(with_param(tensor(), "shared_memory_region", "ghost"), "shared_memory_byte_size", len(good_bytes))], raw=[])))
grpc_case("shm: byte_size without region", "INVALID_ARGUMENT", infer(request(inputs=[with_param(tensor(), "shared_memory_byte_size", 4)], raw=[])))

tag = uuid.uuid4().hex[:8]
key = f"/hlo-bad-{tag}"
with open(f"/dev/shm{key}", "wb") as f:
    f.write(b"\0" * len(good_bytes))
try:
    stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name=f"r{tag}", key=key, offset=0, byte_size=len(good_bytes)))
    grpc_case("shm: read past the region", "INVALID_ARGUMENT", infer(request(inputs=[with_param(with_param(with_param(tensor(), "shared_memory_region", f"r{tag}"), "shared_memory_byte_size", len(good_bytes)), "shared_memory_offset", 8)], raw=[])))

    def small_output():
        r = request()
        o = r.outputs.add()
        o.name = out_name
        o.parameters["shared_memory_region"].string_param = f"r{tag}"
        o.parameters["shared_memory_byte_size"].int64_param = 1
        return stub.ModelInfer(r)

    grpc_case("shm: output region too small", "INVALID_ARGUMENT", small_output)
    grpc_case("shm: register a missing key", "INVALID_ARGUMENT", lambda: stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="x", key="/hlo-missing-key", offset=0, byte_size=4)))
    grpc_case("shm: register beyond the object", "INVALID_ARGUMENT", lambda: stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="x", key=key, offset=len(good_bytes), byte_size=8)))
    grpc_case("shm: offset 2^62 in a request (int64 beyond 2^53) is judged, not malformed", "INVALID_ARGUMENT", infer(request(inputs=[with_param(with_param(with_param(tensor(), "shared_memory_region", f"r{tag}"), "shared_memory_byte_size", len(good_bytes)), "shared_memory_offset", 2**62)], raw=[])))
    grpc_case("shm: register with offset 2^63 (uint64 beyond 2^53)", "INVALID_ARGUMENT", lambda: stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="x", key=key, offset=2**63, byte_size=8)))
    grpc_case("shm: a 150-character region name registers", "OK", lambda: stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="r" * 150, key=key, offset=0, byte_size=8)))
    victim = f"/tmp/hlo-victim-{tag}"
    with open(victim, "wb") as f:
        f.write(b"\7" * 64)
    link = f"/dev/shm/hlo-link-{tag}"
    os.symlink(victim, link)
    try:
        grpc_case("shm: a key that is a symbolic link is not followed", "INVALID_ARGUMENT", lambda: stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="l", key=f"/hlo-link-{tag}", offset=0, byte_size=8)))
        with open(victim, "rb") as f:
            assert f.read() == b"\7" * 64
    finally:
        os.unlink(link)
        os.unlink(victim)
    grpc_case("shm: status of an unknown region", "NOT_FOUND", lambda: stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest(name="ghost")))
finally:
    stub.SystemSharedMemoryUnregister(pb.SystemSharedMemoryUnregisterRequest(name=f"r{tag}"))
    stub.SystemSharedMemoryUnregister(pb.SystemSharedMemoryUnregisterRequest(name="r" * 150))
    os.unlink(f"/dev/shm{key}")

grpc_case("oversize message", "RESOURCE_EXHAUSTED", infer(request(inputs=[tensor(shp=[1, max_recv // 4 + 8])], raw=[b"\0" * (max_recv + 32)])))
garbage = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer", request_serializer=lambda b: b, response_deserializer=lambda b: b)
grpc_case("garbage bytes", "INVALID_ARGUMENT", lambda: garbage(b"\xff\xff\xff\xff\x0f\x01garbage"))
def expired_timeout_param():
    r = request()
    r.parameters["timeout"].int64_param = 1  # Triton's request timeout, in microseconds
    return stub.ModelInfer(r, timeout=30)


grpc_case("timeout parameter of 1 us", "DEADLINE_EXCEEDED", expired_timeout_param)


def huge_timeout_param():
    r = request()
    r.parameters["timeout"].int64_param = 2**63 - 1  # beyond 2^53 and beyond any timer: no deadline
    return stub.ModelInfer(r, timeout=30)


grpc_case("timeout parameter of 2^63-1 us is served", "OK", huge_timeout_param)
grpc_case("client deadline of 30 days is served (grpc-timeout overflow)", "OK", infer(request(), timeout=30 * 86400))
grpc_case("1 MiB model name: NOT_FOUND with a short message", "NOT_FOUND", infer(request(name="m" * 2**20)))
grpc_case("shape of 10^6 dims", "INVALID_ARGUMENT", infer(request(inputs=[tensor(shp=[1] * 10**6)])))
garbage_meta = channel.unary_unary("/inference.GRPCInferenceService/ModelMetadata", request_serializer=lambda b: b, response_deserializer=lambda b: b)
grpc_case("garbage bytes to ModelMetadata", "INVALID_ARGUMENT", lambda: garbage_meta(b"\x0a\xff\xff\xff\xff\x0f\x01"))


def stream_with_garbage_frame():
    stream = channel.stream_stream("/inference.GRPCInferenceService/ModelStreamInfer", request_serializer=lambda b: b, response_deserializer=pb.ModelStreamInferResponse.FromString)
    a, b = request(), request()
    a.id, b.id = "a", "b"
    got = list(stream(iter([a.SerializeToString(), b"\xff\xff\xff", b.SerializeToString()]), timeout=30))
    ok = sorted(m.infer_response.id for m in got if not m.error_message) == ["a", "b"] and sum(1 for m in got if m.error_message) == 1
    if not ok:
        raise RuntimeError(f"stream answers: {got}")


grpc_case("garbage frame in ModelStreamInfer: an error for it, the others answered", "OK", stream_with_garbage_frame)
grpc_case("metadata of unknown model", "NOT_FOUND", lambda: stub.ModelMetadata(pb.ModelMetadataRequest(name="no-such-model")))
grpc_case("config of unknown model", "NOT_FOUND", lambda: stub.ModelConfig(pb.ModelConfigRequest(name="no-such-model")))
grpc_case("statistics of unknown model", "NOT_FOUND", lambda: stub.ModelStatistics(pb.ModelStatisticsRequest(name="no-such-model")))
grpc_case("load in static mode (the default) is refused", "FAILED_PRECONDITION", lambda: stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="no-such-model")))
grpc_case("model ready of unknown model answers OK", "OK", lambda: stub.ModelReady(pb.ModelReadyRequest(name="no-such-model")))
grpc_case("cuda shm register on a CPU server", "UNIMPLEMENTED", lambda: stub.CudaSharedMemoryRegister(pb.CudaSharedMemoryRegisterRequest(name="c", raw_handle=b"\0" * 64, device_id=0, byte_size=4)))

# --- HTTP ---
def http(method, path, body=None, headers=None):
    req = urllib.request.Request(f"http://{http_url}{path}", data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def valid_http():
    body = json.dumps({"inputs": [{"name": inp.name, "datatype": "FP32", "shape": shape,
                                   "data": np.frombuffer(good_bytes, dtype=np.float32).tolist()}]}).encode()
    s, _ = http("POST", f"/v2/models/{model}/infer", body, {"Content-Type": "application/json"})
    return s == 200


def http_case(label, expected, method, path, body=None, headers=None):
    got, payload = http(method, path, body, headers)
    has_error = True
    if got >= 400:
        try:
            doc = json.loads(payload)
            has_error = "error" in doc and str(doc.get("code", "")).startswith("HLO_ERR_") and len(payload) < 4096
        except Exception:
            has_error = False
    results.append({"proto": "http", "case": label, "expected": expected, "got": got, "ok": got == expected and has_error and valid_http() and valid_still_works()})


J = {"Content-Type": "application/json"}
vals = np.frombuffer(good_bytes, dtype=np.float32).tolist()
good_input = {"name": inp.name, "datatype": "FP32", "shape": shape, "data": vals}
http_case("unknown model infer", 404, "POST", "/v2/models/no-such-model/infer", json.dumps({"inputs": [good_input]}).encode(), J)
http_case("invalid JSON", 400, "POST", f"/v2/models/{model}/infer", b"{not json", J)
http_case("missing inputs", 400, "POST", f"/v2/models/{model}/infer", b"{}", J)
http_case("inputs not a list", 400, "POST", f"/v2/models/{model}/infer", json.dumps({"inputs": 3}).encode(), J)
http_case("wrong datatype", 400, "POST", f"/v2/models/{model}/infer", json.dumps({"inputs": [{**good_input, "datatype": "INT32"}]}).encode(), J)
http_case("data count mismatch", 400, "POST", f"/v2/models/{model}/infer", json.dumps({"inputs": [{**good_input, "data": vals[:-1]}]}).encode(), J)
http_case("non-numeric data", 400, "POST", f"/v2/models/{model}/infer", json.dumps({"inputs": [{**good_input, "data": ["a"] * n}]}).encode(), J)
http_case("wrong rank", 400, "POST", f"/v2/models/{model}/infer", json.dumps({"inputs": [{**good_input, "shape": shape + [1]}]}).encode(), J)
http_case("unknown output", 400, "POST", f"/v2/models/{model}/infer", json.dumps({"inputs": [good_input], "outputs": [{"name": "nope"}]}).encode(), J)
hdr = json.dumps({"inputs": [{"name": inp.name, "datatype": "FP32", "shape": shape, "parameters": {"binary_data_size": len(good_bytes)}}]}).encode()
http_case("binary header length past the body", 400, "POST", f"/v2/models/{model}/infer", hdr + good_bytes, {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(hdr) + len(good_bytes) + 10)})
http_case("binary data shorter than declared", 400, "POST", f"/v2/models/{model}/infer", hdr + good_bytes[:-4], {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(hdr))})
http_case("garbage binary body", 400, "POST", f"/v2/models/{model}/infer", b"\x00\xff" * 32, {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": "16"})
http_case("body over the size limit", 413, "POST", f"/v2/models/{model}/infer", b"{" + b" " * (max_recv + 1024) + b"}", J)
http_case("metadata of unknown model", 404, "GET", "/v2/models/no-such-model")
http_case("unregistered shm region", 400, "POST", f"/v2/models/{model}/infer", json.dumps({"inputs": [{"name": inp.name, "datatype": "FP32", "shape": shape, "parameters": {"shared_memory_region": "ghost", "shared_memory_byte_size": len(good_bytes)}}]}).encode(), J)

http_case("ragged rows with the right total", 400, "POST", f"/v2/models/{model}/infer", json.dumps({"inputs": [{**good_input, "shape": [2, n // 2 + n // 2], "data": [vals[: n - 1], vals[:1]]}]}).encode(), J)
http_case("a number beyond double range (1e400)", 400, "POST", f"/v2/models/{model}/infer", json.dumps({"inputs": [good_input]}).replace(str(vals[0]), "1e400", 1).encode(), J)
deep = "[" * 100000 + "1" + "]" * 100000
http_case("data nested 100,000 deep", 400, "POST", f"/v2/models/{model}/infer", ('{"inputs":[{"name":"%s","datatype":"FP32","shape":%s,"data":%s}]}' % (inp.name, json.dumps(shape), deep)).encode(), J)
http_case("JSON body over the JSON limit", 413, "POST", f"/v2/models/{model}/infer", b"{" + b" " * (max_json + 16) + b"}", J)
http_case("1 MiB input name: a short error", 400, "POST", f"/v2/models/{model}/infer", json.dumps({"inputs": [{**good_input, "name": "n" * 2**20}]}).encode(), J)
http_case("timeout parameter of 2^63-1 us is served", 200, "POST", f"/v2/models/{model}/infer", json.dumps({"parameters": {"timeout": 2**63 - 1}, "inputs": [good_input]}).encode(), J)
http_case("x-timeout-ms of 2^40 is served", 200, "POST", f"/v2/models/{model}/infer", json.dumps({"inputs": [good_input]}).encode(), {**J, "x-timeout-ms": str(2**40)})
http_case("a path segment of 5000 characters", 400, "GET", "/v2/models/" + "m" * 5000)
http_case("an unknown route", 400, "GET", "/v2/no-such-route")
http_case("a 150-character region name reaches the registry (no 414)", 400, "POST", "/v2/systemsharedmemory/region/" + "r" * 150 + "/register", json.dumps({"key": "/hlo-missing-key", "offset": 0, "byte_size": 8}).encode(), J)

print(json.dumps({"cases": results}))
