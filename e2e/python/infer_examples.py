"""Drives a running hloserve with Triton's own Python clients (gRPC and HTTP) over every example
bundle that has a reference.safetensors, plus system shared memory, and prints one JSON report.

usage: infer_examples.py GRPC_URL HTTP_URL MODELS_DIR
"""
import json
import os
import queue
import sys
import uuid

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

from refdata import WIRE, reference, rel_error

grpc_url, http_url, models_dir = sys.argv[1:4]
report = {"checks": [], "models": {}}


def check(name, ok, detail=""):
    report["checks"].append({"name": name, "ok": bool(ok), "detail": str(detail)[:500]})


def request_tensors(mod, inputs, outputs):
    """The inline inputs (numpy arrays by name) and requested outputs of one request, for grpcclient or httpclient."""
    ins = []
    for name, arr in inputs.items():
        i = mod.InferInput(name, list(arr.shape), WIRE[arr.dtype])
        i.set_data_from_numpy(np.ascontiguousarray(arr))
        ins.append(i)
    return ins, [mod.InferRequestedOutput(n) for n in outputs]


g = grpcclient.InferenceServerClient(grpc_url)
h = httpclient.InferenceServerClient(http_url)
check("grpc live", g.is_server_live())
check("grpc ready", g.is_server_ready())
check("http live", h.is_server_live())
check("http ready", h.is_server_ready())
meta = g.get_server_metadata(as_json=True)
check("server metadata names hloserve", meta.get("name") == "hloserve", meta)
check("unknown model not ready (grpc)", g.is_model_ready("no-such-model") is False)
try:
    g.get_model_metadata("no-such-model")
    check("unknown model metadata is NOT_FOUND", False, "no error")
except InferenceServerException as e:
    check("unknown model metadata is NOT_FOUND", e.status() == "StatusCode.NOT_FOUND", e.status())
index = g.get_model_repository_index(as_json=True)
check("repository index lists models", len(index.get("models", [])) > 0, index)

for model in sorted(os.listdir(models_dir)):
    bundle = os.path.join(models_dir, model)
    if not os.path.exists(os.path.join(bundle, "reference.safetensors")):
        continue
    # A bundle with hooks answers at the client's level (client-reference.json, infer_hooks.py);
    # its reference.safetensors is the executable's.
    if os.path.exists(os.path.join(bundle, "client-reference.json")):
        continue
    inputs, outputs, _ = reference(bundle)
    res = {}
    check(f"{model}: ready", g.is_model_ready(model))
    md = g.get_model_metadata(model, as_json=True)
    check(f"{model}: metadata inputs", sorted(i["name"] for i in md["inputs"]) == sorted(inputs), md)
    cfg = g.get_model_config(model, as_json=True)
    check(f"{model}: config has max_batch_size", "max_batch_size" in cfg.get("config", {}), cfg)
    for proto, client, mod in (("grpc", g, grpcclient), ("http", h, httpclient)):
        ins, outs = request_tensors(mod, inputs, outputs)
        r = client.infer(model, ins, outputs=outs, request_id=f"{proto}-{model}")
        for name, want in outputs.items():
            got = r.as_numpy(name)
            err = rel_error(got, want)
            res[f"{proto}:{name}"] = err
            check(f"{model}: {proto} output {name} rel err {err:.2e} < 1e-4", got is not None and got.shape == want.shape and err < 1e-4, f"shape {None if got is None else got.shape} vs {want.shape}")
        if proto == "grpc":
            check(f"{model}: grpc echoes request id", r.get_response().id == f"grpc-{model}")
    # ModelStreamInfer (bidi): three requests on one stream, answers through the callback as they
    # complete; a request for an unknown model answers an error for that request only.
    answers = queue.Queue()
    g.start_stream(callback=lambda result, error: answers.put((result, error)))
    try:
        ins, outs = request_tensors(grpcclient, inputs, outputs)
        for k in range(3):
            g.async_stream_infer(model, ins, outputs=outs, request_id=f"stream-{model}-{k}")
        ids = set()
        for _ in range(3):
            result, error = answers.get(timeout=120)
            if error is not None:
                check(f"{model}: stream answer", False, error)
                continue
            ids.add(result.get_response().id)
            for name, want in outputs.items():
                err = rel_error(result.as_numpy(name), want)
                res[f"grpc:stream:{name}"] = max(err, res.get(f"grpc:stream:{name}", 0))
        check(f"{model}: stream answered every request", ids == {f"stream-{model}-{k}" for k in range(3)}, ids)
        g.async_stream_infer("no-such-model", ins, outputs=outs, request_id="stream-missing")
        result, error = answers.get(timeout=120)
        check(f"{model}: stream answers an unknown model's request with an error", result is None and error is not None and "no-such-model" in str(error), error)
        g.async_stream_infer(model, ins, outputs=outs, request_id="stream-after")
        result, error = answers.get(timeout=120)
        check(f"{model}: the stream lives on after an error", error is None and result.get_response().id == "stream-after", error)
    finally:
        g.stop_stream()
    # system shared memory: inputs and outputs through /dev/shm regions
    tag = uuid.uuid4().hex[:8]
    in_bytes = sum(a.nbytes for a in inputs.values())
    out_bytes = sum(a.nbytes for a in outputs.values())
    hin = shm.create_shared_memory_region(f"in-{tag}", f"/hlo-in-{tag}", in_bytes)
    hout = shm.create_shared_memory_region(f"out-{tag}", f"/hlo-out-{tag}", out_bytes)
    try:
        g.register_system_shared_memory(f"in-{tag}", f"/hlo-in-{tag}", in_bytes)
        g.register_system_shared_memory(f"out-{tag}", f"/hlo-out-{tag}", out_bytes)
        ins, off = [], 0
        arrays = [np.ascontiguousarray(a) for a in inputs.values()]
        shm.set_shared_memory_region(hin, arrays)
        for (name, arr) in zip(inputs, arrays):
            i = grpcclient.InferInput(name, list(arr.shape), WIRE[arr.dtype])
            i.set_shared_memory(f"in-{tag}", arr.nbytes, offset=off)
            ins.append(i)
            off += arr.nbytes
        outs, offs, off = [], {}, 0
        for name, want in outputs.items():
            o = grpcclient.InferRequestedOutput(name)
            o.set_shared_memory(f"out-{tag}", want.nbytes, offset=off)
            offs[name] = off
            outs.append(o)
            off += want.nbytes
        r = g.infer(model, ins, outputs=outs)
        for name, want in outputs.items():
            got = shm.get_contents_as_numpy(hout, want.dtype, list(want.shape), offset=offs[name])
            err = rel_error(got, want)
            res[f"shm:{name}"] = err
            check(f"{model}: shm output {name} rel err {err:.2e} < 1e-4", err < 1e-4)
        status = g.get_system_shared_memory_status(as_json=True)
        check(f"{model}: shm status lists regions", len(status.get("regions", {})) >= 2, status)
    finally:
        g.unregister_system_shared_memory(f"in-{tag}")
        g.unregister_system_shared_memory(f"out-{tag}")
        shm.destroy_shared_memory_region(hin)
        shm.destroy_shared_memory_region(hout)
    stats = g.get_inference_statistics(model, as_json=True)
    count = int(stats["model_stats"][0].get("inference_count", 0)) if stats.get("model_stats") else 0
    check(f"{model}: statistics count inferences", count >= 1, stats)
    report["models"][model] = res

print(json.dumps(report))
