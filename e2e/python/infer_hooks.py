"""tritonclient (gRPC and HTTP) against every example bundle that has a client-reference.json:
models with hooks and meta models. Sends the committed request, compares with the committed
response, and prints one JSON report."""
import base64
import json
import os
import sys

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

grpc_url, http_url, models_dir = sys.argv[1:4]
NP = {"FP32": np.float32, "INT32": np.int32, "INT64": np.int64, "UINT8": np.uint8}
report = {"checks": [], "models": {}}


def check(name, ok, detail=""):
    report["checks"].append({"name": name, "ok": bool(ok), "detail": str(detail)[:500]})


def decode(t):
    if t["datatype"] == "BYTES":
        items = [base64.b64decode(b) for b in t["data_b64"]]
        return np.array(items, dtype=np.object_).reshape(t["shape"])
    raw = base64.b64decode(t["raw_b64"])
    return np.frombuffer(raw, dtype=NP[t["datatype"]]).reshape(t["shape"])


g = grpcclient.InferenceServerClient(grpc_url)
h = httpclient.InferenceServerClient(http_url)
for model in sorted(os.listdir(models_dir)):
    path = os.path.join(models_dir, model, "client-reference.json")
    if not os.path.exists(path):
        continue
    with open(path) as f:
        ref = json.load(f)
    tol = ref.get("tolerance", 1e-4)
    res = {}
    check(f"{model}: ready", g.is_model_ready(model))
    md = g.get_model_metadata(model, as_json=True)
    check(f"{model}: metadata lists the client inputs", sorted(i["name"] for i in md["inputs"]) == sorted(t["name"] for t in ref["inputs"]), md)
    for proto, client, mod in (("grpc", g, grpcclient), ("http", h, httpclient)):
        ins = []
        for t in ref["inputs"]:
            arr = decode(t)
            i = mod.InferInput(t["name"], list(arr.shape), t["datatype"])
            i.set_data_from_numpy(arr)
            ins.append(i)
        try:
            r = client.infer(model, ins, outputs=[mod.InferRequestedOutput(t["name"]) for t in ref["outputs"]])
        except Exception as e:  # noqa: BLE001
            check(f"{model}: {proto} infer", False, e)
            continue
        for t in ref["outputs"]:
            want = decode(t)
            got = r.as_numpy(t["name"])
            if t["datatype"] == "BYTES":
                ok = got is not None and got.shape == want.shape and [bytes(x) for x in got.reshape(-1)] == list(want.reshape(-1))
                res[f"{proto}:{t['name']}"] = 0.0 if ok else 1.0
            elif want.dtype.kind == "f":
                err = float(np.max(np.abs(got.astype(np.float64) - want))) if got is not None and got.shape == want.shape else float("inf")
                ok = err <= tol
                res[f"{proto}:{t['name']}"] = err
            else:
                ok = got is not None and got.shape == want.shape and np.array_equal(got, want)
                res[f"{proto}:{t['name']}"] = 0.0 if ok else 1.0
            check(f"{model}: {proto} output {t['name']} matches the reference", ok, f"got {got!r} want {want!r}")
    report["models"][model] = res

print(json.dumps(report))
