import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, suite, test } from 'node:test';
import { ControlService } from '../../src/control/control-service.js';
import { adminToken, mint, mlpSettings, startControl, startMlpWorker, tempDir } from './harness.js';

suite('PATCH /settings weightBudgetBytes', () => {
  const dir = tempDir();
  after(() => rmSync(dir, { recursive: true, force: true }));
  // Without the compile cache every size is compiled and warmed before serving: a warmup after
  // serving holds the weights it runs with, and they would not be idle when the budget shrinks.
  const settings = { ...mlpSettings(), compileCache: { maxBytes: 0 } };

  test('an admin shrinks the budget: idle weights over it are evicted at once, and a restart keeps it', async () => {
    let worker = await startMlpWorker(settings);
    let h = await startControl(worker, dir);
    const admin = await adminToken(h);
    const op = await mint(h, admin, 'operator');
    const as = (t: string) => ({ authorization: `Bearer ${t}` });
    const patch = (token: string, payload: object) =>
      h.control.app.inject({ method: 'PATCH', url: '/api/v1/settings', headers: as(token), payload });
    const key = new ControlService(worker).model('mlp')!.weights!.model;
    // mlp is pinned on the device by default: unpinned, it counts against the budget.
    const unpin = { method: 'POST' as const, url: '/api/v1/models/mlp/unpin', headers: as(op.token), payload: {} };
    assert.equal((await h.control.app.inject(unpin)).statusCode, 200);
    (await worker.cache.acquire(key)).release();
    assert.equal(worker.cache.isResident(key), true, 'a dispatch put mlp on the device');

    assert.equal((await patch(op.token, { weightBudgetBytes: 0 })).statusCode, 403, 'settings are admin-only');
    assert.equal((await patch(admin, { weightBudgetBytes: -1 })).statusCode, 400);
    assert.equal((await patch(admin, { weightBudgetBytes: 1.5 })).statusCode, 400);
    assert.equal(worker.cache.isResident(key), true, 'refused changes evicted nothing');

    const res = await patch(admin, { weightBudgetBytes: 0 });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().data.weightBudgetBytes, 0);
    assert.equal(worker.cache.isResident(key), false, 'mlp was evicted to meet the budget');
    const m = (await h.control.app.inject({ url: '/api/v1/models/mlp', headers: as(op.token) })).json().data;
    assert.equal(m.residency.evictions, 1);
    const workers = (await h.control.app.inject({ url: '/api/v1/workers', headers: as(op.token) })).json().data;
    assert.equal(workers[0].devices[0].budgetBytes, 0);
    await h.close();
    await worker.stop(false);

    worker = await startMlpWorker(settings);
    assert.notEqual(worker.cache.stats().budgetBytes, 0, 'node.yaml alone gives its own budget');
    h = await startControl(worker, dir);
    try {
      assert.equal(worker.cache.stats().budgetBytes, 0, 'the stored budget wins at start');
      const audit = (await h.control.app.inject({ url: '/api/v1/audit?limit=50', headers: as(admin) })).json().data as {
        actor: string;
        action: string;
        after: { weightBudgetBytes?: number; setBy?: string };
      }[];
      const r = audit.find((a) => a.action === 'settings.reconcile' && a.after.weightBudgetBytes === 0);
      assert.ok(r, 'the restart is audited');
      assert.match(r.after.setBy ?? '', /^token:/, 'it names who set the budget');
    } finally {
      await h.close();
      await worker.stop(false);
    }
  });
});
