import type { ModelDetail, TensorSpec } from '../../api/types.js';

/** Wire dims for one request at batch 1: the manifest's dims reversed, the batch axis set to 1. */
function wireDims(s: TensorSpec): number[] {
  const dims = [...s.dims].reverse();
  const letters = [...s.shape].reverse();
  return dims.map((d, i) => (letters[i] === 'n' ? 1 : d));
}

const tritonDtype: Record<string, string> = {
  float32: 'FP32',
  float16: 'FP16',
  float64: 'FP64',
  int32: 'INT32',
  int64: 'INT64',
  uint8: 'UINT8',
  int8: 'INT8',
  bool: 'BOOL',
};
const numpyDtype: Record<string, string> = {
  FP32: 'float32',
  FP16: 'float16',
  FP64: 'float64',
  INT32: 'int32',
  INT64: 'int64',
  UINT8: 'uint8',
  INT8: 'int8',
  BOOL: 'bool_',
};

function wireType(s: TensorSpec): string {
  return tritonDtype[s.dtype.toLowerCase()] ?? s.dtype.toUpperCase();
}

export function curlSnippet(httpBase: string, m: ModelDetail): string {
  const inputs = m.inputs.map((s) => {
    const shape = wireDims(s);
    const n = shape.reduce((a, b) => a * b, 1);
    return { name: s.name, shape, datatype: wireType(s), data: `<${n} values>` };
  });
  const body = JSON.stringify({ inputs }, null, 2).replace(
    /"<(\d+) values>"/g,
    (_m, n: string) => `[${Number(n) <= 8 ? Array(Number(n)).fill(0).join(', ') : `0, 0, … ${n} values`}]`,
  );
  return `curl -s ${httpBase}/v2/models/${m.name}/infer \\\n  -H 'content-type: application/json' \\\n  -d '${body}'`;
}

export function tritonclientSnippet(grpcAddr: string, m: ModelDetail): string {
  const lines = [
    'import numpy as np',
    'import tritonclient.grpc as grpcclient',
    '',
    `client = grpcclient.InferenceServerClient("${grpcAddr}")`,
    'inputs = []',
  ];
  for (const s of m.inputs) {
    const t = wireType(s);
    lines.push(`x = np.zeros(${JSON.stringify(wireDims(s))}, dtype=np.${numpyDtype[t] ?? 'float32'})`);
    lines.push(`i = grpcclient.InferInput("${s.name}", x.shape, "${t}"); i.set_data_from_numpy(x); inputs.append(i)`);
  }
  lines.push(`result = client.infer("${m.name}", inputs)`);
  for (const o of m.outputs) lines.push(`print(result.as_numpy("${o.name}").shape)`);
  return lines.join('\n');
}
