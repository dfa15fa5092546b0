/**
 * Copyable client snippets for a model, built from its tensors (GET /models/:name/io): one
 * request at batch size 1 (variable axes 1), or, for curl, the bundle's reference request saved
 * as request.json when the console has it.
 */
import type { TensorView } from '../../api/types.js';

/** The wire shape of one request: batch 1, variable axes 1. */
export const requestShape = (t: TensorView): number[] => t.wireShape.map((d) => (d < 0 ? 1 : d));

const NUMPY: Readonly<Record<string, string>> = {
  BOOL: 'np.bool_',
  UINT8: 'np.uint8',
  UINT16: 'np.uint16',
  UINT32: 'np.uint32',
  UINT64: 'np.uint64',
  INT8: 'np.int8',
  INT16: 'np.int16',
  INT32: 'np.int32',
  INT64: 'np.int64',
  FP16: 'np.float16',
  FP32: 'np.float32',
  FP64: 'np.float64',
  BYTES: 'np.object_',
};

/** Names, axes and shapes as the console shows them: "x FP32 [N, 784] (n f)". */
export function describeTensor(t: TensorView): string {
  const dims = t.wireShape.map((d, i) =>
    i === t.wireBatchAxis ? 'N' : d < 0 ? t.wireLetters[i]!.toUpperCase() : String(d),
  );
  return `${t.name} ${t.datatype} [${dims.join(', ')}] (${[...t.wireLetters].join(' ')})`;
}

export function curlSnippet(httpBase: string, name: string, inputs: readonly TensorView[], withFile: boolean): string {
  const zero = (t: TensorView) => {
    const shape = requestShape(t);
    const n = shape.reduce((a, b) => a * b, 1);
    const fill = t.datatype === 'BYTES' ? '""' : t.datatype === 'BOOL' ? 'false' : '0';
    const data = n <= 16 ? `[${Array.from({ length: n }, () => fill).join(', ')}]` : `[<${n} values>]`;
    return `{"name": "${t.name}", "shape": [${shape.join(', ')}], "datatype": "${t.datatype}", "data": ${data}}`;
  };
  const lines = [`# the model's tensors`, `curl -s ${httpBase}/v2/models/${name}`, ``];
  if (withFile) {
    lines.push(
      `# the bundle's reference request (download request.json below)`,
      `curl -s ${httpBase}/v2/models/${name}/infer \\`,
      `  -H 'content-type: application/json' --data-binary @request.json`,
    );
  } else {
    lines.push(
      `# one request at batch size 1`,
      `curl -s ${httpBase}/v2/models/${name}/infer \\`,
      `  -H 'content-type: application/json' \\`,
      `  -d '{"inputs": [${inputs.map(zero).join(', ')}]}'`,
    );
  }
  return lines.join('\n');
}

export function tritonclientSnippet(grpcAddr: string, name: string, inputs: readonly TensorView[]): string {
  const lines = [
    'import numpy as np',
    'import tritonclient.grpc as grpcclient',
    '',
    `client = grpcclient.InferenceServerClient("${grpcAddr}")`,
    'inputs = []',
  ];
  for (const t of inputs) {
    const shape = `[${requestShape(t).join(', ')}]`;
    const value =
      t.datatype === 'BYTES'
        ? `np.array([b"hloserve"] * ${requestShape(t).reduce((a, b) => a * b, 1)}, dtype=np.object_).reshape(${shape})`
        : `np.zeros(${shape}, dtype=${NUMPY[t.datatype] ?? 'np.float32'})`;
    lines.push(
      `x = ${value}`,
      `i = grpcclient.InferInput("${t.name}", ${shape}, "${t.datatype}")`,
      'i.set_data_from_numpy(x)',
      'inputs.append(i)',
    );
  }
  lines.push(
    `result = client.infer("${name}", inputs)`,
    'for o in result.get_response().outputs:',
    '    print(o.name, result.as_numpy(o.name).shape)',
  );
  return lines.join('\n');
}
