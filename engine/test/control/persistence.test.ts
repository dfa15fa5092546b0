import { ControlService } from '../../src/control/control-service.js';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, suite, test } from 'node:test';
import { adminToken, mint, mlpSettings, startControl, startMlpWorker, tempDir } from './harness.js';

suite('desired state survives a restart', () => {
  const dir = tempDir();
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('pin a model, set a weight and the discipline, restart: all in effect, and the audit shows who', async () => {
    // First life: an operator pins and weights mlp; an admin changes the discipline.
    let worker = await startMlpWorker();
    let h = await startControl(worker, dir);
    const admin = await adminToken(h);
    const op = await mint(h, admin, 'operator');
    const as = (t: string) => ({ authorization: `Bearer ${t}` });
    const inject = (method: 'POST' | 'PATCH', url: string, token: string, payload: object) =>
      h.control.app.inject({ method, url, headers: as(token), payload });
    assert.equal((await inject('POST', '/api/v1/models/mlp/pin', op.token, { residency: 'device' })).statusCode, 200);
    assert.equal((await inject('PATCH', '/api/v1/models/mlp/policy', op.token, { weight: 4 })).statusCode, 200);
    assert.equal((await inject('PATCH', '/api/v1/settings', admin, { discipline: 'fifo' })).statusCode, 200);
    await h.close();
    await worker.stop(false);

    // Second life: a fresh worker reads node.yaml (no policy for mlp); the store brings the rest.
    worker = await startMlpWorker();
    assert.equal(new ControlService(worker).model('mlp')!.policy.weight, 1, 'node.yaml alone gives weight 1');
    h = await startControl(worker, dir);
    try {
      assert.equal(h.control.setupToken, null, 'an admin exists: no new setup token');
      const m = (await h.control.app.inject({ url: '/api/v1/models/mlp', headers: as(op.token) })).json().data;
      assert.equal(m.policy.residency, 'device');
      assert.equal(m.policy.weight, 4);
      assert.equal(m.residency.floor, 'device');
      assert.equal(
        new ControlService(worker).model('mlp')!.weights!.residency,
        'device',
        'the weight cache holds the pin',
      );
      assert.equal(
        worker.scheduler.stats(worker.registry.get('mlp')!.queue)!.weight,
        4,
        'the scheduler holds the weight',
      );
      assert.equal(worker.scheduler.discipline, 'fifo');
      const audit = (await h.control.app.inject({ url: '/api/v1/audit?limit=50', headers: as(op.token) })).json()
        .data as { actor: string; action: string; after: { setBy?: string; residency?: string; weight?: number } }[];
      const pin = audit.find((r) => r.action === 'model.pin')!;
      assert.equal(pin.actor, `token:${op.id}`, 'who pinned');
      const reconciled = audit.find((r) => r.action === 'model.policy.reconcile')!;
      assert.equal(reconciled.actor, 'system:reconcile');
      assert.equal(reconciled.after.setBy, `token:${op.id}`, 'the restart names who set the policy');
      assert.equal(reconciled.after.residency, 'device');
      assert.equal(reconciled.after.weight, 4);
      assert.ok(audit.some((r) => r.action === 'settings.reconcile' && r.actor === 'system:reconcile'));
    } finally {
      await h.close();
      await worker.stop(false);
    }
  });
  test('a model that loads after the console started gets its stored policy as it loads', async () => {
    // The console starts while nothing is loaded yet (serve() starts it beside the startup set).
    const worker = await startMlpWorker({ ...mlpSettings(), modelsInclude: [] });
    const h = await startControl(worker, dir);
    try {
      const control = new ControlService(worker);
      assert.equal(control.model('mlp'), undefined, 'not loaded when the console starts');
      await control.load('mlp');
      await h.control.context.desired.settled();
      assert.equal(control.model('mlp')!.policy.weight, 4, 'the stored weight applied at load');
      assert.equal(control.model('mlp')!.policy.residency, 'device', 'the stored pin applied at load');
      assert.equal(worker.scheduler.stats(worker.registry.get('mlp')!.queue)!.weight, 4);
    } finally {
      await h.close();
      await worker.stop(false);
    }
  });
});
