/**
 * Draining a model through the control API: new requests are refused naming the drain, the ones
 * already admitted finish, readiness turns false, and resume or load lift it.
 */
import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { inferMlp, mlpControlFixture } from './harness.js';

suite('drain (control API, real Worker)', () => {
  const f = mlpControlFixture();

  const act = (action: string, key?: string) =>
    f.h.control.app.inject({
      method: 'POST',
      url: `/api/v1/models/mlp/${action}`,
      headers: { authorization: `Bearer ${f.admin}`, ...(key ? { 'idempotency-key': key } : {}) },
    });

  test('admitted requests finish, new ones are refused naming the drain, resume lifts it', async () => {
    // Admitted before the drain (admission is synchronous in infer()).
    const earlier = Array.from({ length: 24 }, (_, i) => inferMlp(f.worker, `early-${i}`));
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
      inferMlp(f.worker, 'late'),
      (e: unknown) =>
        e instanceof ServeError && e.code === 'HLO_ERR_MODEL_NOT_READY' && /'mlp' is draining/.test(e.message),
    );
    assert.equal(f.worker.modelReady('mlp', ''), false, 'KServe readiness is false while drained');
    const listed = (
      await f.h.control.app.inject({
        method: 'GET',
        url: '/api/v1/models/mlp',
        headers: { authorization: `Bearer ${f.admin}` },
      })
    ).json().data;
    assert.equal(listed.drain.idle, true);
    // The live feed's models topic carries the drain, so the console can offer resume.
    const hub = f.h.control.context.hub;
    hub.sample();
    const fed = JSON.parse(hub.topic('models').snapshotText()).data.items.mlp;
    assert.equal(fed.drain.idle, true);

    const resumed = await act('resume');
    assert.equal(resumed.statusCode, 200, resumed.body);
    assert.equal(resumed.json().data.drain, null);
    hub.sample();
    assert.equal(JSON.parse(hub.topic('models').snapshotText()).data.items.mlp.drain, null);
    assert.equal(f.worker.modelReady('mlp', ''), true);
    assert.deepEqual((await inferMlp(f.worker, 'after')).outputs[0]!.shape, [1, 10]);
  });

  test('a drain with requests in flight reports them pending until they finish', async () => {
    const earlier = Array.from({ length: 64 }, (_, i) => inferMlp(f.worker, `busy-${i}`));
    const pendingAtStart = f.worker.registry.get('mlp')!.current!.holds;
    assert.ok(pendingAtStart > 0, 'requests are in flight when the drain starts');
    const res = await act('drain');
    assert.equal(res.json().data.drain.idle, true);
    await Promise.all(earlier);
    // A load lifts the drain too.
    const loaded = await act('load');
    assert.equal(loaded.statusCode, 200, loaded.body);
    assert.equal(loaded.json().data.drain, null);
    assert.equal(f.worker.modelReady('mlp', ''), true);
  });

  test('drain and resume are audited once each, with before and after', async () => {
    const before = (
      await f.h.control.app.inject({
        method: 'GET',
        url: '/api/v1/audit?limit=500',
        headers: { authorization: `Bearer ${f.admin}` },
      })
    ).json().data.length as number;
    const [a, b] = await Promise.all([act('drain', 'd-1'), act('drain', 'd-1')]);
    assert.equal(a.statusCode, 200);
    assert.equal(b.statusCode, 200);
    await act('resume');
    const rows = (
      await f.h.control.app.inject({
        method: 'GET',
        url: '/api/v1/audit?limit=500',
        headers: { authorization: `Bearer ${f.admin}` },
      })
    ).json().data as { action: string; before: unknown; after: unknown }[];
    assert.equal(rows.length - before, 2, 'the retried drain is audited once, the resume once');
    const drain = rows.find((r) => r.action === 'model.drain')!;
    assert.deepEqual(drain.after, { state: 'READY', version: '1', draining: true });
    const resume = rows.find((r) => r.action === 'model.resume')!;
    assert.deepEqual(resume.after, { state: 'READY', version: '1', draining: false });
    await new Promise((r) => setTimeout(r, 50)); // events are stored asynchronously
    const events = (
      await f.h.control.app.inject({
        method: 'GET',
        url: '/api/v1/events?model=mlp&limit=500',
        headers: { authorization: `Bearer ${f.admin}` },
      })
    ).json().data as { kind: string }[];
    assert.ok(events.some((e) => e.kind === 'model.drain'));
    assert.ok(events.some((e) => e.kind === 'model.resume'));
  });
});
