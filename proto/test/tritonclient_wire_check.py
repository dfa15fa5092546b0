#!/usr/bin/env python3
"""Wire-compatibility check of hloserve's generated protobuf code against the real tritonclient.

Needs: `pip install 'tritonclient[grpc]'` and a built proto package (`npx tsc -b proto`).
Run from the repository root:  python3 proto/test/tritonclient_wire_check.py

1. tritonclient builds a ModelInferRequest exactly as it sends it (its own request builder and
   service_pb2); the TypeScript decoder reads it back field by field.
2. The TypeScript single-copy encoder writes a ModelInferResponse; tritonclient's service_pb2
   parses it and InferResult.as_numpy() decodes every output.
3. tritonclient.grpc.InferenceServerClient talks to the TypeScript echo server over gRPC:
   health, metadata, shared-memory unregister, unary infer (incl. 16 MiB) and streaming infer.
0. (when protoc is installed) every message, field, enum value and RPC of our
   inference/*.proto has the same number, type, label and type name as in tritonclient's
   compiled descriptors (service_pb2 / model_config_pb2); fields we leave out are listed.
Prints one line per check and exits non-zero on the first failure.
"""
import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile

import numpy as np

try:  # tritonclient >= r26.06 takes BF16 as ml_dtypes.bfloat16; older releases as float32 (truncated)
    import ml_dtypes

    BF16 = ml_dtypes.bfloat16
except ImportError:  # pragma: no cover
    BF16 = np.float32
import tritonclient.grpc as grpcclient
from tritonclient.grpc import _utils as tc_utils
from tritonclient.grpc import model_config_pb2, service_pb2
from tritonclient.utils import InferenceServerException, serialize_byte_tensor

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROTO_INDEX = os.path.join(ROOT, "proto", "dist", "src", "index.js")
ECHO_SERVER = os.path.join(ROOT, "proto", "dist", "testing", "echo-server.js")


def node(script, stdin=b""):
    r = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        check=False,
    )
    if r.returncode != 0:
        raise RuntimeError(f"node failed: {r.stderr.decode()}")
    return r.stdout


def ok(msg):
    print(f"ok   {msg}")


def sha(b):
    return hashlib.sha256(bytes(b)).hexdigest()


def inputs():
    fp32 = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    i64 = np.array([[-(2**40), 0, 2**52]], dtype=np.int64)
    text = np.array([b"a", b"bcd", b""], dtype=np.object_)
    bf16 = np.array([[1.5, -2.25, 3.0]], dtype=np.float32).astype(BF16)
    ins = [
        grpcclient.InferInput("FP32_IN", list(fp32.shape), "FP32"),
        grpcclient.InferInput("INT64_IN", list(i64.shape), "INT64"),
        grpcclient.InferInput("BYTES_IN", list(text.shape), "BYTES"),
        grpcclient.InferInput("BF16_IN", list(bf16.shape), "BF16"),
    ]
    ins[0].set_data_from_numpy(fp32)
    ins[1].set_data_from_numpy(i64)
    ins[2].set_data_from_numpy(text)
    ins[3].set_data_from_numpy(bf16)
    return ins, {"FP32_IN": fp32, "INT64_IN": i64, "BYTES_IN": text, "BF16_IN": bf16}


def check_descriptors():
    protoc = os.environ.get("PROTOC") or shutil.which("protoc")
    if not protoc:
        print("skip descriptor comparison: protoc not installed")
        return
    from google.protobuf import descriptor_pb2

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        subprocess.run(
            [protoc, f"-I{os.path.join(ROOT, 'proto')}", f"--descriptor_set_out={out}", "--include_imports",
             "inference/grpc_service.proto"],
            check=True,
        )
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())

    theirs = {}
    for mod in (service_pb2, model_config_pb2):
        fdp = descriptor_pb2.FileDescriptorProto()
        mod.DESCRIPTOR.CopyToProto(fdp)
        theirs[fdp.name] = fdp

    def walk_msgs(prefix, msgs, acc):
        for m in msgs:
            name = f"{prefix}.{m.name}"
            acc[name] = m
            walk_msgs(name, m.nested_type, acc)
        return acc

    def walk_enums(prefix, fdp_or_msg, acc):
        for e in fdp_or_msg.enum_type:
            acc[f"{prefix}.{e.name}"] = {v.name: v.number for v in e.value}
        for m in getattr(fdp_or_msg, "nested_type", getattr(fdp_or_msg, "message_type", [])):
            walk_enums(f"{prefix}.{m.name}", m, acc)
        return acc

    t_msgs, t_enums, t_svcs = {}, {}, {}
    for fdp in theirs.values():
        walk_msgs(".inference", fdp.message_type, t_msgs)
        walk_enums(".inference", fdp, t_enums)
        for s in fdp.service:
            t_svcs[s.name] = {m.name: (m.input_type, m.output_type, m.client_streaming, m.server_streaming) for m in s.method}
    n_fields, omitted = 0, []
    for fdp in fds.file:
        if fdp.package != "inference":
            continue
        o_msgs = walk_msgs(".inference", fdp.message_type, {})
        for name, m in o_msgs.items():
            assert name in t_msgs, f"message {name} not in tritonclient"
            tf = {f.number: f for f in t_msgs[name].field}
            of = {f.number for f in m.field}
            for f in m.field:
                t = tf.get(f.number)
                assert t is not None, f"{name}.{f.name} = {f.number} not in tritonclient"
                mine = (f.name, f.type, f.label, f.type_name, f.HasField("oneof_index"))
                ref = (t.name, t.type, t.label, t.type_name, t.HasField("oneof_index"))
                assert mine == ref, f"{name} field {f.number}: ours {mine} != tritonclient {ref}"
                n_fields += 1
            omitted += [f"{name[len('.inference.'):]}.{t.name}={n}" for n, t in tf.items() if n not in of]
        for name, values in walk_enums(".inference", fdp, {}).items():
            assert t_enums.get(name) == values, f"enum {name}: ours {values} != tritonclient {t_enums.get(name)}"
        for s in fdp.service:
            mine = {m.name: (m.input_type, m.output_type, m.client_streaming, m.server_streaming) for m in s.method}
            assert mine == t_svcs[s.name], f"service {s.name} differs"
    gs = [f for f in fds.file if f.name == "inference/grpc_service.proto"][0]
    o_gs = walk_msgs(".inference", gs.message_type, {})
    missing = [n for n in walk_msgs(".inference", theirs["grpc_service.proto"].message_type, {}) if n not in o_gs]
    assert not missing, f"grpc_service messages missing: {missing}"
    ok(f"descriptors: {n_fields} fields, all enums and all {len(t_svcs['GRPCInferenceService'])} RPCs match tritonclient"
       f" (model_config fields left out: {len(omitted)})")


def check_request_decode():
    ins, _ = inputs()
    outs = [grpcclient.InferRequestedOutput("OUT0"), grpcclient.InferRequestedOutput("OUT1", class_count=3)]
    custom = {"s": "str", "b": True, "i": -7, "f": 0.5}
    req = tc_utils._get_inference_request(
        model_name="m",
        inputs=ins,
        model_version="2",
        request_id="req-1",
        outputs=outs,
        sequence_id=12345,
        sequence_start=True,
        sequence_end=False,
        priority=3,
        timeout=1000,
        parameters=custom,
    )
    assert isinstance(req, service_pb2.ModelInferRequest)
    wire = req.SerializeToString()
    out = node(
        f"""
import {{ ModelInferRequest }} from {json.dumps(PROTO_INDEX)};
import {{ createHash }} from 'node:crypto';
const chunks = []; for await (const c of process.stdin) chunks.push(c);
const r = ModelInferRequest.decode(Buffer.concat(chunks));
const params = (m) => Object.fromEntries([...m].map(([k, v]) => [k, v.parameterChoice]));
process.stdout.write(JSON.stringify({{
  modelName: r.modelName, modelVersion: r.modelVersion, id: r.id, parameters: params(r.parameters),
  inputs: r.inputs.map((i) => ({{ name: i.name, datatype: i.datatype, shape: i.shape, parameters: params(i.parameters), contents: i.contents ?? null }})),
  outputs: r.outputs.map((o) => ({{ name: o.name, parameters: params(o.parameters) }})),
  raw: r.rawInputContents.map((b) => createHash('sha256').update(b).digest('hex')),
}}));
""",
        wire,
    )
    got = json.loads(out)
    assert got["modelName"] == "m" and got["modelVersion"] == "2" and got["id"] == "req-1", got
    p = got["parameters"]
    assert p["sequence_id"] == {"$case": "int64Param", "value": "12345"}, p
    assert p["sequence_start"] == {"$case": "boolParam", "value": True}, p
    assert p["sequence_end"] == {"$case": "boolParam", "value": False}, p
    assert p["priority"] == {"$case": "uint64Param", "value": "3"}, p
    assert p["timeout"] == {"$case": "int64Param", "value": "1000"}, p
    assert p["s"] == {"$case": "stringParam", "value": "str"}, p
    assert p["b"] == {"$case": "boolParam", "value": True}, p
    assert p["i"] == {"$case": "int64Param", "value": "-7"}, p
    assert p["f"] == {"$case": "doubleParam", "value": 0.5}, p
    want_inputs = [(i.name(), i.datatype(), i.shape()) for i in ins]
    assert [(i["name"], i["datatype"], i["shape"]) for i in got["inputs"]] == want_inputs, got["inputs"]
    assert all(i["contents"] is None for i in got["inputs"])
    assert got["outputs"][0] == {"name": "OUT0", "parameters": {}}, got["outputs"]
    assert got["outputs"][1]["parameters"]["classification"] == {"$case": "int64Param", "value": "3"}
    assert got["raw"] == [sha(b) for b in req.raw_input_contents], "raw_input_contents differ"
    ok(f"tritonclient ModelInferRequest ({len(wire)} B, {len(p)} params, 4 raw inputs) decodes in TypeScript")


def check_response_encode():
    # BYTES payload and BF16 bits computed here; TypeScript only writes them into the message.
    text = np.array([b"hello", b"", b"\x00\xff"], dtype=np.object_)
    text_raw = serialize_byte_tensor(text).item()
    bf16_src = np.array([1.5, -2.25, 3.0, 0.0], dtype=np.float32)
    bf16_raw = (bf16_src.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    fp32 = (np.arange(3 * 1024 * 1024, dtype=np.float32) * 0.25).reshape(3, -1)  # 12 MiB: single-copy path
    spec = {"text": text_raw.hex(), "bf16": bf16_raw.hex()}
    wire = node(
        f"""
import {{ encodeModelInferResponse, ModelInferResponse, boolParam, int64Param }} from {json.dumps(PROTO_INDEX)};
const spec = {json.dumps(spec)};
const fp32 = new Float32Array(3 * 1024 * 1024); for (let i = 0; i < fp32.length; i++) fp32[i] = i * 0.25;
const res = ModelInferResponse.fromPartial({{
  modelName: 'm', modelVersion: '1', id: 'r9',
  parameters: new Map([['triton_final_response', boolParam(true)], ['n', int64Param(-5)]]),
  outputs: [
    {{ name: 'FP32_OUT', datatype: 'FP32', shape: [3, 1024 * 1024] }},
    {{ name: 'BYTES_OUT', datatype: 'BYTES', shape: [3] }},
    {{ name: 'BF16_OUT', datatype: 'BF16', shape: [4] }},
  ],
  rawOutputContents: [new Uint8Array(fp32.buffer), Buffer.from(spec.text, 'hex'), Buffer.from(spec.bf16, 'hex')],
}});
process.stdout.write(encodeModelInferResponse(res));
"""
    )
    msg = service_pb2.ModelInferResponse()
    msg.ParseFromString(wire)
    assert msg.model_name == "m" and msg.model_version == "1" and msg.id == "r9"
    assert msg.parameters["triton_final_response"].bool_param is True
    assert msg.parameters["n"].int64_param == -5
    result = grpcclient.InferResult(msg)
    assert np.array_equal(result.as_numpy("FP32_OUT"), fp32)
    assert list(result.as_numpy("BYTES_OUT")) == list(text)
    assert np.array_equal(result.as_numpy("BF16_OUT").astype(np.float32), bf16_src)
    ok(f"TypeScript ModelInferResponse ({len(wire) / 2**20:.1f} MiB; FP32, BYTES, BF16) parses in service_pb2, as_numpy matches")


def check_live():
    proc = subprocess.Popen(["node", ECHO_SERVER], stdout=subprocess.PIPE, cwd=ROOT, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("PORT "), line
        url = f"127.0.0.1:{line.split()[1]}"
        c = grpcclient.InferenceServerClient(url)
        assert c.is_server_live() and c.is_server_ready()
        assert c.is_model_ready("echo") is True and c.is_model_ready("nope") is False
        md = c.get_server_metadata()
        assert md.name == "hloserve-echo" and md.version == "0.1.0"
        c.unregister_system_shared_memory()
        c.unregister_cuda_shared_memory()
        ok("tritonclient health, model ready, server metadata, shm unregister(all) against the TS server")

        ins, arrays = inputs()
        res = c.infer("echo", ins, request_id="x1", sequence_id=7, priority=1, parameters={"k": "v"})
        assert res.get_response().id == "x1"
        for name, want in arrays.items():
            got = res.as_numpy(name)
            if want.dtype == np.object_:
                assert list(got.reshape(-1)) == list(want.reshape(-1)), name
            else:
                assert got.dtype == want.dtype and np.array_equal(got.astype(np.float64), want.astype(np.float64)), name
        big = np.random.default_rng(0).standard_normal((4, 1024, 1024), dtype=np.float32)  # 16 MiB
        bin_ = grpcclient.InferInput("BIG", list(big.shape), "FP32")
        bin_.set_data_from_numpy(big)
        assert np.array_equal(c.infer("echo", [bin_]).as_numpy("BIG"), big)
        try:
            c.infer("nope", ins)
            raise AssertionError("expected an error")
        except InferenceServerException as e:
            assert "StatusCode.NOT_FOUND" in e.status(), e.status()
        ok("tritonclient infer (FP32, INT64, BYTES, BF16, 16 MiB FP32) echoes exactly; unknown model -> NOT_FOUND")

        q = queue.Queue()
        c.start_stream(callback=lambda result, error: q.put((result, error)))
        c.async_stream_infer("echo", ins, request_id="s1")
        c.async_stream_infer("missing", ins, request_id="s2")
        c.async_stream_infer("echo", [bin_], request_id="s3")
        got = [q.get(timeout=10) for _ in range(3)]
        c.stop_stream()
        assert got[0][1] is None and got[0][0].get_response().id == "s1"
        assert got[1][0] is None and "missing" in str(got[1][1])
        assert got[2][1] is None and np.array_equal(got[2][0].as_numpy("BIG"), big)
        ok("tritonclient stream infer: results in order, in-band error, 16 MiB over the stream")
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    if not os.path.exists(PROTO_INDEX) or not os.path.exists(ECHO_SERVER):
        sys.exit("build first: npx tsc -b proto")
    check_descriptors()
    check_request_decode()
    check_response_encode()
    check_live()
    print("tritonclient wire check: all passed")
