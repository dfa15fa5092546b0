"""Infers one served model with Triton's own Python clients (gRPC and HTTP) against the
reference.safetensors of a bundle directory, optionally over TLS, and prints one JSON report.

usage: infer_bundle.py GRPC_URL HTTP_URL BUNDLE_DIR MODEL [CA_CERT]
With CA_CERT both clients connect with TLS and trust only that CA; each also checks that a
plaintext client is refused.
"""
import json
import sys

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from refdata import WIRE, reference, rel_error

grpc_url, http_url, bundle, model = sys.argv[1:5]
ca = sys.argv[5] if len(sys.argv) > 5 else None
report = {"checks": [], "errors": {}}


def check(name, ok, detail=""):
    report["checks"].append({"name": name, "ok": bool(ok), "detail": str(detail)[:500]})


if ca:
    g = grpcclient.InferenceServerClient(grpc_url, ssl=True, root_certificates=ca)
    h = httpclient.InferenceServerClient(http_url, ssl=True, ssl_options={"ca_certs": ca})
else:
    g = grpcclient.InferenceServerClient(grpc_url)
    h = httpclient.InferenceServerClient(http_url)

inputs, outputs, _ = reference(bundle)
for proto, client, mod in (("grpc", g, grpcclient), ("http", h, httpclient)):
    check(f"{proto}: {model} ready", client.is_model_ready(model))
    ins = []
    for name, arr in inputs.items():
        i = mod.InferInput(name, list(arr.shape), WIRE[arr.dtype])
        i.set_data_from_numpy(np.ascontiguousarray(arr))
        ins.append(i)
    r = client.infer(model, ins, outputs=[mod.InferRequestedOutput(n) for n in outputs])
    for name, want in outputs.items():
        got = r.as_numpy(name)
        err = rel_error(got, want)
        report["errors"][f"{proto}:{name}"] = err
        check(f"{proto}: {model} output {name} rel err {err:.2e} < 1e-4",
              got is not None and got.shape == want.shape and err < 1e-4,
              f"shape {None if got is None else got.shape} vs {want.shape}")

if ca:
    for proto, make in (("grpc", lambda: grpcclient.InferenceServerClient(grpc_url).is_server_live()),
                        ("http", lambda: httpclient.InferenceServerClient(http_url, network_timeout=5.0).is_server_live())):
        try:
            make()
            check(f"{proto}: plaintext client refused", False, "a plaintext call succeeded")
        except Exception as e:  # noqa: BLE001: any failure to talk is the refusal
            check(f"{proto}: plaintext client refused", True, type(e).__name__)

print(json.dumps(report))
