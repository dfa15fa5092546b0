import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import type { CompiledModel } from '../../src/model/compiled-model.js';
import type { ModelVersion } from '../../src/model/model-version.js';
import type { HostTensor } from '../../src/tensor.js';
import { PjrtExecutor, type PjrtLease } from '../../src/device/pjrt-executor.js';

suite('PjrtExecutor', () => {
  test('a timed-out dispatch settles only when the device work returns, so its lease outlives it', async () => {
    let finish!: (out: HostTensor[]) => void;
    const calls: unknown[][] = [];
    // A stand-in model whose run the test finishes by hand (a device that has not returned yet).
    const model = {
      run: (...args: unknown[]) => {
        calls.push(args);
        return new Promise<HostTensor[]>((r) => (finish = r));
      },
    } as unknown as CompiledModel;
    let holds = 0;
    const version = {
      compiled: model,
      hold: () => void holds++,
      release: () => void holds--,
    } as unknown as ModelVersion;
    const exec = new PjrtExecutor({} as never);
    const timedOut = new AbortController();
    const lease = { weights: [], release: () => {} } as unknown as PjrtLease;
    let settled = false;
    const running = exec
      .execute({ model: 'm', version, batchSize: 1, rows: 1, requests: 1, inputs: [], lease, signal: timedOut.signal })
      .then((out) => ((settled = true), out));
    timedOut.abort(new Error('dispatch timeout'));
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, 'an abort does not settle what PJRT cannot stop');
    assert.equal(calls[0]!.length, 3, 'the signal is not passed to the executable');
    assert.equal(holds, 1, 'the version is held while the device runs it');
    const out: HostTensor[] = [{ name: 'y', dtype: 'f32', shape: [1], data: new Uint8Array(4) }];
    finish(out);
    assert.deepEqual(await running, out);
    assert.equal(holds, 0);
  });
  test('an inline batch that finds the synchronous client busy (runInline null) runs pooled instead', async () => {
    const out: HostTensor[] = [{ name: 'y', dtype: 'f32', shape: [1], data: new Uint8Array(4) }];
    const calls: string[] = [];
    let busy = true;
    const model = {
      runInline: () => (calls.push('inline'), busy ? null : out),
      run: () => (calls.push('pooled'), Promise.resolve(out)),
    } as unknown as CompiledModel;
    const version = { compiled: model, hold: () => {}, release: () => {} } as unknown as ModelVersion;
    const exec = new PjrtExecutor({} as never, { inline: true });
    const lease = { weights: [], release: () => {} } as unknown as PjrtLease;
    const req = {
      model: 'm',
      version,
      batchSize: 1,
      rows: 1,
      requests: 1,
      inputs: [],
      lease,
      signal: new AbortController().signal,
      mayRunInline: true,
    };
    assert.deepEqual(await exec.execute(req), out);
    assert.deepEqual(calls, ['inline', 'pooled'], 'tried inline, then pooled');
    busy = false;
    calls.length = 0;
    assert.deepEqual(await exec.execute(req), out);
    assert.deepEqual(calls, ['inline'], 'a free client runs it inline');
  });
});
