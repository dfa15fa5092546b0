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
      HLOSERVE_SCHEDULER_MAX_QUEUE_DELAY_US: '5000000',
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
    // A 5 s batching window keeps these queued until the signal arrives (drain closes windows).
    const calls = Array.from(
      { length: 8 },
      () =>
        new Promise<ModelInferResponse>((resolve, reject) =>
          client.modelInfer(req, (err, res) => (err ? reject(err) : resolve(res!))),
        ),
    );
    // Wait until the worker reports all 8 queued, so the signal meets queued work, however busy the machine.
    for (let i = 0; i < 200; i++) {
      const text = await (await fetch(`http://127.0.0.1:${server.ports.metrics}/metrics`)).text();
      if (/^hloserve_queue_depth\{model="mlp"\} 8$/m.test(text)) break;
      await new Promise((r) => setTimeout(r, 25));
    }
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
