/**
 * The supervisor keeps the operator's placement in the operations store: two CPU workers under
 * lpt_packing, an operator adds a replica of mlp through the fleet's console port, the whole
 * supervisor stops (SIGTERM) and starts again on the same store, and mlp comes back on both
 * workers with the action in the placement audit.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { startServer, type ServerProcess } from '../src/server-process.js';

interface View {
  models: { name: string; placed: string[]; desiredReplicas: number }[];
}

suite('the operator placement survives a supervisor restart', () => {
  let state = '';
  let server: ServerProcess | null = null;
  const start = () =>
    startServer(
      { HLOSERVE_STATE_URL: `sqlite:${join(state, 'state.sqlite')}`, HLOSERVE_MODELS_INCLUDE: 'mlp' },
      300_000,
      ['--workers', '2', '--base-port', '0', '--routing', 'lpt_packing'],
    );

  before(async () => {
    state = mkdtempSync(join(tmpdir(), 'hloserve-placement-state-'));
    server = await start();
  });
  after(async () => {
    await server?.stop();
    rmSync(state, { recursive: true, force: true });
  });

  test('add_replica, restart, and mlp is on both workers again, the action audited', async () => {
    let base = `http://127.0.0.1:${server!.ports.console}`;
    // The workers share one fresh store; the setup token still valid is the latest one logged.
    const setupTokens = server!.logs
      .map((l) => (/#setup=([A-Za-z0-9._~-]+)/.exec(l) ?? /"setupToken"\s*:\s*"([^"]+)"/.exec(l))?.[1])
      .filter((t): t is string => t !== undefined)
      .reverse();
    let token = '';
    for (const setupToken of new Set(setupTokens)) {
      const r = await fetch(`${base}/api/v1/setup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ setupToken }),
      });
      if (r.status === 201) {
        token = ((await r.json()) as { data: { token: string } }).data.token;
        break;
      }
    }
    assert.ok(token, 'an admin token from the setup exchange');
    const auth = { authorization: `Bearer ${token}` };
    const view = async (): Promise<View> =>
      ((await (await fetch(`${base}/api/v1/placements`, { headers: auth })).json()) as { data: View }).data;

    assert.equal((await view()).models.find((m) => m.name === 'mlp')?.placed.length, 1);
    const act = await fetch(`${base}/api/v1/placements/mlp/add_replica`, { method: 'POST', headers: auth });
    assert.equal(act.status, 200, await act.clone().text());
    assert.equal((await view()).models.find((m) => m.name === 'mlp')?.placed.length, 2);

    assert.equal(await server!.stop(), 0);
    server = null;
    server = await start();
    base = `http://127.0.0.1:${server.ports.console}`;
    const mlp = (await view()).models.find((m) => m.name === 'mlp');
    assert.equal(mlp?.desiredReplicas, 2, 'the replica count came back from the store');
    assert.deepEqual([...(mlp?.placed ?? [])].sort(), ['worker0', 'worker1']);
    const audit = (
      (await (await fetch(`${base}/api/v1/placements/audit`, { headers: auth })).json()) as {
        data: { action: string; target: string }[];
      }
    ).data;
    assert.deepEqual(
      audit.map((e) => `${e.action} ${e.target}`),
      ['placement.add_replica mlp'],
    );
  });
});
