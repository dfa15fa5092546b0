/**
 * The supervisor's gateway keeps the operator's placement in the state store: act through the
 * console port on a gateway over a real SQLite file, stop it and close the store, start a new
 * gateway on a freshly opened store (a supervisor restart), and the replicas, the move and the
 * audit are all there. The workers are stand-ins answering the fleet's health, index and session.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { serveGateway, type RunningGateway } from '@hloserve/gateway';
import { openStore, type Store } from '../../src/state/index.js';
import { StorePlacementState } from '../../src/supervisor/placement-state.js';
import { standIn, type StandIn } from './stand-in-worker.js';

suite('the supervisor gateway: placement and audit survive a restart (SQLite store)', () => {
  let dir: string;
  let ws: StandIn[];

  const start = async (store: Store, fleet = 'node-a'): Promise<RunningGateway> =>
    serveGateway(
      {
        workers: ws.map((w, i) => ({
          name: `w${i}`,
          address: {
            grpc: `127.0.0.1:${w.grpcPort}`,
            http: '127.0.0.1:1',
            metrics: `127.0.0.1:${w.httpPort}`,
            console: `127.0.0.1:${w.httpPort}`,
          },
        })),
        mode: 'lpt_packing',
        healthIntervalMs: 60_000,
        placementIntervalMs: 60_000,
        state: new StorePlacementState(store, fleet),
      },
      { host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1, consolePort: 0 },
    );
  const act = async (gw: RunningGateway, model: string, action: string, body?: unknown) => {
    const r = await fetch(`http://127.0.0.1:${gw.ports.console}/api/v1/placements/${model}/${action}`, {
      method: 'POST',
      headers: { authorization: 'Bearer op', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await r.json()) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.equal(r.status, 200, JSON.stringify(json));
    return json.data;
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hloserve-placement-'));
    ws = [await standIn(), await standIn(), await standIn()];
  });
  after(() => {
    for (const w of ws) {
      w.grpc.forceShutdown();
      w.http.close();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test('replicas, a move and the audit come back after the gateway and its store restart', async () => {
    const file = join(dir, 'state', 'hloserve.sqlite');
    let store = await openStore({ cacheDir: dir, sqlitePath: file });
    await store.insertToken({
      id: 'tk-op',
      name: 'nightly-ops',
      scope: 'operator',
      hash: 'h-op',
      createdAt: 1,
      createdBy: 'admin',
      expiresAt: null,
      revokedAt: null,
      lastUsedAt: null,
    });
    let gw = await start(store);
    await act(gw, 'a', 'add_replica');
    await act(gw, 'a', 'add_replica');
    const bOn = gw.gateway.router.placement().get('b')!.workers[0]!;
    const to = ['w0', 'w1', 'w2'].find((w) => w !== bOn)!;
    await act(gw, 'b', 'move', { from: bOn, to });
    assert.equal(gw.gateway.router.placement().get('a')!.workers.length, 3);
    await gw.stop();
    await store.close();

    store = await openStore({ cacheDir: dir, sqlitePath: file });
    gw = await start(store);
    try {
      // The first packing after the restart already has them: no action, no traffic.
      assert.equal(gw.gateway.placement.desiredReplicas('a', 3), 3);
      assert.equal(gw.gateway.router.placement().get('a')!.workers.length, 3, 'a on every worker again');
      assert.deepEqual(gw.gateway.placement.pinnedOn('b'), [to]);
      assert.deepEqual([...gw.gateway.router.placement().get('b')!.workers], [to], 'b where the operator moved it');
      assert.equal(gw.gateway.placement.desiredReplicas('c', 3), 1, 'an untouched model stays at the default');

      const r = await fetch(`http://127.0.0.1:${gw.ports.console}/api/v1/placements/audit`, {
        headers: { authorization: 'Bearer op' },
      });
      const audit = (
        (await r.json()) as { data: { action: string; target: string; actorName: string; actor: string }[] }
      ).data;
      assert.deepEqual(
        audit.map((e) => `${e.action} ${e.target}`),
        ['placement.move b', 'placement.add_replica a', 'placement.add_replica a'],
      );
      assert.equal(audit[0]!.actor, 'token:tk-op');
      assert.equal(audit[0]!.actorName, 'nightly-ops', 'the name comes from the token row');

      // Released after the restart: the row says so, and a third start sees b unpinned.
      await act(gw, 'b', 'release');
      const rows = await store.listPlacements('node-a');
      assert.deepEqual(
        rows.map((p) => [p.model, p.replicas, p.pinned]),
        [
          ['a', 3, null],
          ['b', 1, null],
        ],
      );
      // Another node sharing the store names its workers alike; node-a's rows are not its own.
      const other = await start(store, 'node-b');
      try {
        assert.equal(other.gateway.placement.desiredReplicas('a', 3), 1);
        assert.equal(other.gateway.placement.pinnedOn('b'), undefined);
      } finally {
        await other.stop();
      }
      // The control API's audit sees the same records (one append-only log).
      const all = await store.listAudit({ limit: 10 });
      assert.equal(all.length, 4);
      assert.equal((await store.listAudit({ limit: 10, actionPrefix: 'placement.move' })).length, 1);
    } finally {
      await gw.stop();
      await store.close();
    }
  });
});
