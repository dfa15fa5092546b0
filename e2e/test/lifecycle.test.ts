import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { credentials } from '@grpc/grpc-js';
import { GRPCInferenceClient, type ModelInferRequest, type ModelInferResponse } from '@hloserve/proto';
import { startServer } from '../src/server-process.js';

interface InferClient {
  modelInfer(req: ModelInferRequest, cb: (err: Error | null, res?: ModelInferResponse) => void): void;
  close(): void;
}

suite('lifecycle', () => {
  test('SIGTERM drains in-flight requests and exits 0', async () => {
    const server = await startServer({
      HLOSERVE_MODELS_INCLUDE: 'mlp',
      HLOSERVE_SCHEDULER_MAX_QUEUE_DELAY_US: '200000',
    });
    const client = new GRPCInferenceClient(server.grpcUrl(), credentials.createInsecure()) as unknown as InferClient;
    const x = Buffer.alloc(784 * 4);
    const req: ModelInferRequest = {
      modelName: 'mlp',
      modelVersion: '',
      id: '',
      parameters: new Map(),
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 784], parameters: new Map(), contents: undefined }],
      outputs: [],
      rawInputContents: [x],
    };
    // A 200 ms batching window keeps these queued when the signal arrives.
    const calls = Array.from(
      { length: 8 },
      () =>
        new Promise<ModelInferResponse>((resolve, reject) =>
          client.modelInfer(req, (err, res) => (err ? reject(err) : resolve(res!))),
        ),
    );
    await new Promise((r) => setTimeout(r, 50));
    const code = server.stop('SIGTERM');
    const results = await Promise.allSettled(calls);
    client.close();
    assert.deepEqual(
      results.map((r) => r.status),
      Array(8).fill('fulfilled'),
    );
    for (const r of results)
      assert.equal((r as PromiseFulfilledResult<ModelInferResponse>).value.rawOutputContents[0]!.byteLength, 40);
    assert.equal(await code, 0);
    assert.ok(server.logs.some((l) => l.includes('"msg":"stopped"')));
  });
});
