/**
 * Draining a model through the control API: new requests are refused naming the drain, the ones
 * already admitted finish, readiness turns false, and resume or load lift it.
 */
import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import type { Worker } from '../../src/worker/worker.js';
import { adminToken, type Harness, startControl, startMlpWorker, tempDir } from './harness.js';

function infer(worker: Worker, id: string) {
  const x = new Float32Array(784).fill(0.25);
  return worker.infer(
    {
      modelName: 'mlp',
      modelVersion: '',
      id,
      parameters: {},
      inputs: [
        {
          name: 'x',
          datatype: 'FP32',
          shape: [1, 784],
          parameters: {},
          data: { kind: 'raw', bytes: new Uint8Array(x.buffer) },
        },
      ],
      outputs: [],
    },
    { deadline: null, signal: new AbortController().signal },
  );
}

suite('drain (control API, real Worker)', () => {
  let worker: Worker;
  let h: Harness;
  let admin: string;
  before(async () => {
    worker = await startMlpWorker();
    h = await startControl(worker, tempDir());
    admin = await adminToken(h);
  });
  after(async () => {
    await h.close();
    await worker.stop(false);
  });

  const act = (action: string, key?: string) =>
    h.control.app.inject({
      method: 'POST',
      url: `/api/v1/models/mlp/${action}`,
      headers: { authorization: `Bearer ${admin}`, ...(key ? { 'idempotency-key': key } : {}) },
    });

  test('admitted requests finish, new ones are refused naming the drain, resume lifts it', async () => {
    // Admitted before the drain (admission is synchronous in infer()).
    const earlier = Array.from({ length: 24 }, (_, i) => infer(worker, `early-${i}`));
    const drained = await act('drain');
    assert.equal(drained.statusCode, 200, drained.body);
    const view = drained.json().data;
    assert.equal(view.state, 'READY');
    assert.equal(view.drain.idle, true, 'the drain answers once the admitted requests are done');
    assert.equal(view.drain.pending, 0);
    assert.ok(view.drain.since > 0);
    const answers = await Promise.allSettled(earlier);
    assert.deepEqual(
      answers.filter((a) => a.status === 'rejected'),
      [],
      'every request admitted before the drain was answered',
    );
    await assert.rejects(
      infer(worker, 'late'),
      (e: unknown) =>
        e instanceof ServeError && e.code === 'HLO_ERR_MODEL_NOT_READY' && /'mlp' is draining/.test(e.message),
    );
    assert.equal(worker.modelReady('mlp', ''), false, 'KServe readiness is false while drained');
    const listed = (
      await h.control.app.inject({
        method: 'GET',
        url: '/api/v1/models/mlp',
        headers: { authorization: `Bearer ${admin}` },
      })
    ).json().data;
    assert.equal(listed.drain.idle, true);

    const resumed = await act('resume');
    assert.equal(resumed.statusCode, 200, resumed.body);
    assert.equal(resumed.json().data.drain, null);
    assert.equal(worker.modelReady('mlp', ''), true);
    assert.deepEqual((await infer(worker, 'after')).outputs[0]!.shape, [1, 10]);
  });

  test('a drain with requests in flight reports them pending until they finish', async () => {
    const earlier = Array.from({ length: 64 }, (_, i) => infer(worker, `busy-${i}`));
    const pendingAtStart = worker.registry.get('mlp')!.current!.holds;
    assert.ok(pendingAtStart > 0, 'requests are in flight when the drain starts');
    const res = await act('drain');
    assert.equal(res.json().data.drain.idle, true);
    await Promise.all(earlier);
    // A load lifts the drain too.
    const loaded = await act('load');
    assert.equal(loaded.statusCode, 200, loaded.body);
    assert.equal(loaded.json().data.drain, null);
    assert.equal(worker.modelReady('mlp', ''), true);
  });

  test('drain and resume are audited once each, with before and after', async () => {
    const before = (
      await h.control.app.inject({
        method: 'GET',
        url: '/api/v1/audit?limit=500',
        headers: { authorization: `Bearer ${admin}` },
      })
    ).json().data.length as number;
    const [a, b] = await Promise.all([act('drain', 'd-1'), act('drain', 'd-1')]);
    assert.equal(a.statusCode, 200);
    assert.equal(b.statusCode, 200);
    await act('resume');
    const rows = (
      await h.control.app.inject({
        method: 'GET',
        url: '/api/v1/audit?limit=500',
        headers: { authorization: `Bearer ${admin}` },
      })
    ).json().data as { action: string; before: unknown; after: unknown }[];
    assert.equal(rows.length - before, 2, 'the retried drain is audited once, the resume once');
    const drain = rows.find((r) => r.action === 'model.drain')!;
    assert.deepEqual(drain.after, { state: 'READY', version: '1', draining: true });
    const resume = rows.find((r) => r.action === 'model.resume')!;
    assert.deepEqual(resume.after, { state: 'READY', version: '1', draining: false });
    await new Promise((r) => setTimeout(r, 50)); // events are stored asynchronously
    const events = (
      await h.control.app.inject({
        method: 'GET',
        url: '/api/v1/events?model=mlp&limit=500',
        headers: { authorization: `Bearer ${admin}` },
      })
    ).json().data as { kind: string }[];
    assert.ok(events.some((e) => e.kind === 'model.drain'));
    assert.ok(events.some((e) => e.kind === 'model.resume'));
  });
});
