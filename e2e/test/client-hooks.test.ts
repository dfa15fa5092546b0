import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { bytesTensor, InferenceClient, tensor, type NumericArray, type Tensor } from '@hloserve/client';
import { examplesDir, startServer, type ServerProcess } from '../src/server-process.js';

// The bundles with hooks and the meta model, through @hloserve/client, against the request and
// response their client-reference.json holds (the same files infer_hooks.py checks tritonclient
// against).
interface RefTensor {
  name: string;
  datatype: string;
  shape: number[];
  raw_b64?: string;
  data_b64?: string[];
}

const ARRAYS: Record<string, new (b: ArrayBuffer) => NumericArray> = {
  FP32: Float32Array,
  INT32: Int32Array,
  UINT8: Uint8Array,
};

function toTensor(t: RefTensor): Tensor {
  if (t.datatype === 'BYTES')
    return bytesTensor(
      t.data_b64!.map((b) => new Uint8Array(Buffer.from(b, 'base64'))),
      t.shape,
    );
  const raw = Buffer.from(t.raw_b64!, 'base64');
  const own = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength);
  return tensor(new ARRAYS[t.datatype]!(own as ArrayBuffer), t.shape);
}

const bundles = readdirSync(examplesDir).filter((m) => existsSync(join(examplesDir, m, 'client-reference.json')));

suite('@hloserve/client on the bundles with hooks and the meta model', () => {
  let server: ServerProcess;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  test('there are bundles with client references', () => {
    assert.ok(bundles.length >= 3, bundles.join(', '));
  });

  for (const protocol of ['grpc', 'http'] as const) {
    test(`${protocol}: every output matches the client reference`, async () => {
      const c = new InferenceClient({ url: protocol === 'grpc' ? server.grpcUrl() : server.httpUrl(), protocol });
      try {
        for (const m of bundles) {
          const ref = JSON.parse(readFileSync(join(examplesDir, m, 'client-reference.json'), 'utf8')) as {
            inputs: RefTensor[];
            outputs: RefTensor[];
            tolerance: number;
          };
          const inputs = Object.fromEntries(ref.inputs.map((t) => [t.name, toTensor(t)]));
          const res = await c.model(m).infer(inputs);
          for (const want of ref.outputs.map((t) => ({ name: t.name, ...toTensor(t) }))) {
            const got = res.output(want.name);
            assert.equal(got.datatype, want.datatype, `${m}.${want.name}`);
            assert.deepEqual(got.shape, want.shape, `${m}.${want.name}`);
            if (want.datatype === 'BYTES') {
              const text = (x: Tensor) => (x.data as Uint8Array[]).map((b) => Buffer.from(b).toString('latin1'));
              assert.deepEqual(text(got), text(want), `${m}.${want.name}`);
            } else {
              const g = got.data as NumericArray;
              const w = want.data as NumericArray;
              for (let i = 0; i < w.length; i++)
                assert.ok(
                  Math.abs(Number(g[i]) - Number(w[i])) <= ref.tolerance,
                  `${m}.${want.name}[${i}]: ${g[i]} vs ${w[i]}`,
                );
            }
          }
        }
      } finally {
        await c.close();
      }
    });
  }
});
