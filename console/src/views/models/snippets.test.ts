import { describe, expect, test } from 'vitest';
import type { TensorView } from '../../api/types.js';
import { curlSnippet, describeTensor, requestShape, tritonclientSnippet } from './snippets.js';

const image: TensorView = {
  name: 'image',
  datatype: 'FP32',
  letters: 'cwhn',
  wireLetters: 'nhwc',
  dims: { c: 3, w: 32, h: 32 },
  wireShape: [-1, 32, 32, 3],
  wireBatchAxis: 0,
};
const tokens: TensorView = {
  name: 'ids',
  datatype: 'INT32',
  letters: 'tn',
  wireLetters: 'nt',
  dims: { t: -1 },
  wireShape: [-1, -1],
  wireBatchAxis: 0,
};

describe('client snippets from the model tensors', () => {
  test('a tensor reads with its batch axis as N and its axes in wire order', () => {
    expect(describeTensor(image)).toBe('image FP32 [N, 32, 32, 3] (n h w c)');
    expect(describeTensor(tokens)).toBe('ids INT32 [N, T] (n t)');
  });

  test('one request is batch 1 with variable axes 1', () => {
    expect(requestShape(image)).toEqual([1, 32, 32, 3]);
    expect(requestShape(tokens)).toEqual([1, 1]);
  });

  test('curl sends request.json when the console has the reference request, else an inline zero input', () => {
    expect(curlSnippet('http://h:8000', 'resnet', [image], true)).toContain('--data-binary @request.json');
    const inline = curlSnippet('http://h:8000', 'tok', [tokens], false);
    expect(inline).toContain('"name": "ids", "shape": [1, 1], "datatype": "INT32", "data": [0]');
    expect(curlSnippet('http://h:8000', 'resnet', [image], false)).toContain('"data": [<3072 values>]');
  });

  test('tritonclient builds each input with its numpy dtype and shape', () => {
    const py = tritonclientSnippet('h:8001', 'resnet', [image]);
    expect(py).toContain('x = np.zeros([1, 32, 32, 3], dtype=np.float32)');
    expect(py).toContain('grpcclient.InferInput("image", [1, 32, 32, 3], "FP32")');
    expect(py).toContain('client.infer("resnet", inputs)');
  });
});
