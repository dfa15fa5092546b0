/**
 * Copyable client snippets for a model. The control API does not describe a model's tensors, so
 * both snippets ask the server (KServe model metadata) and build a zero input of the right shape.
 */
export function curlSnippet(httpBase: string, name: string): string {
  return [
    `# the inputs: names, datatypes and shapes (-1 is the batch axis)`,
    `curl -s ${httpBase}/v2/models/${name}`,
    ``,
    `# one request (fill "shape" and "data" from the metadata above)`,
    `curl -s ${httpBase}/v2/models/${name}/infer \\`,
    `  -H 'content-type: application/json' \\`,
    `  -d '{"inputs": [{"name": "INPUT", "shape": [1, 4], "datatype": "FP32", "data": [0, 0, 0, 0]}]}'`,
  ].join('\n');
}

export function tritonclientSnippet(grpcAddr: string, name: string): string {
  return [
    'import numpy as np',
    'import tritonclient.grpc as grpcclient',
    'from tritonclient.utils import triton_to_np_dtype',
    '',
    `client = grpcclient.InferenceServerClient("${grpcAddr}")`,
    `meta = client.get_model_metadata("${name}", as_json=True)`,
    'inputs = []',
    'for t in meta["inputs"]:',
    '    shape = [1 if int(d) < 0 else int(d) for d in t["shape"]]',
    '    x = np.zeros(shape, dtype=triton_to_np_dtype(t["datatype"]))',
    '    i = grpcclient.InferInput(t["name"], shape, t["datatype"])',
    '    i.set_data_from_numpy(x)',
    '    inputs.append(i)',
    `result = client.infer("${name}", inputs)`,
    'for t in meta["outputs"]:',
    '    print(t["name"], result.as_numpy(t["name"]).shape)',
  ].join('\n');
}
