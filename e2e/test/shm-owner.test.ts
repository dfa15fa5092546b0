import assert from 'node:assert/strict';
import { truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { after, before, suite, test } from 'node:test';
import { InferenceClient, Status, SystemSharedMemoryRegion, isClientError } from '@hloserve/client';
import { startServer, type ServerProcess } from '../src/server-process.js';

/**
 * The owner of a registered shared-memory object changes it under the server: truncates it below
 * the registered window, or unlinks it. Each access answers INVALID_ARGUMENT naming what happened,
 * and the server keeps serving (the copy happens on the addon's threads through the descriptor, so
 * there is no mapped page to fault on).
 */
suite('shared memory changed by its owner while registered', () => {
  let server: ServerProcess;
  let c: InferenceClient;
  const x = new Float32Array(784).fill(0.5);
  const inline = () => c.model('mlp').infer({ x: { datatype: 'FP32', shape: [1, 784], data: x } });
  const invalid = (pattern: RegExp) => (e: unknown) =>
    isClientError(e) && e.code === Status.INVALID_ARGUMENT && pattern.test(e.message);

  before(async () => {
    server = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp' });
    c = new InferenceClient({ url: server.grpcUrl(), retry: false });
  });
  after(async () => {
    await c.close();
    assert.equal(await server.stop(), 0);
  });

  test('BAD CALL - input and output regions truncated, then unlinked: errors, and inline requests still answer', async () => {
    const name = `shm-owner-${process.pid}`;
    const inRegion = await SystemSharedMemoryRegion.create(`${name}-in`, x.byteLength);
    const outRegion = await SystemSharedMemoryRegion.create(`${name}-out`, 40);
    try {
      await inRegion.write(0, new Uint8Array(x.buffer));
      await c.registerSystemSharedMemory(inRegion);
      await c.registerSystemSharedMemory(outRegion);
      const viaShm = () =>
        c
          .model('mlp')
          .infer(
            { x: { datatype: 'FP32', shape: [1, 784], sharedMemory: { region: inRegion } } },
            { outputs: [{ name: 'logits', sharedMemory: { region: outRegion } }] },
          );
      const want = (await inline()).output('logits').data;
      assert.deepEqual((await viaShm()).output('logits').data, want);

      truncateSync(`/dev/shm/${name}-in`, 100);
      await assert.rejects(viaShm(), invalid(/truncated by its owner/));
      assert.deepEqual((await inline()).output('logits').data, want);

      await inRegion.write(0, new Uint8Array(x.buffer));
      truncateSync(`/dev/shm/${name}-out`, 8);
      await assert.rejects(viaShm(), invalid(/truncated by its owner/));
      // The server did not grow the owner's object back by writing past its end.
      truncateSync(`/dev/shm/${name}-out`, 40);
      assert.deepEqual((await viaShm()).output('logits').data, want);

      unlinkSync(`/dev/shm/${name}-in`);
      await assert.rejects(viaShm(), invalid(/unlinked by its owner/));
      // A new object under the same key is not the registered one until it is registered again.
      writeFileSync(`/dev/shm/${name}-in`, Buffer.from(x.buffer));
      await assert.rejects(viaShm(), invalid(/unlinked/));
      await c.registerSystemSharedMemory(inRegion);
      assert.deepEqual((await viaShm()).output('logits').data, want);
      assert.deepEqual((await inline()).output('logits').data, want);
    } finally {
      await c.unregisterSystemSharedMemory('').catch(() => undefined);
      await inRegion.destroy().catch(() => undefined);
      await outRegion.destroy();
    }
  });
});
