/**
 * The feed's sampler reads every model; with no client attached it must not run (a repository of
 * a thousand models paid tens of ms of the serving thread four times a second for nobody), yet a
 * client attaching, and a route answering a position, must see the state of now.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, suite, test } from 'node:test';
import { WebSocket } from 'ws';
import type { Worker } from '../../src/worker/worker.js';
import { adminToken, startControl, startMlpWorker, tempDir, type Harness } from './harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

suite('the feed sampler with and without clients', () => {
  let worker: Worker;
  let h: Harness;
  let dir: string;
  let admin: string;
  let reads = 0;
  before(async () => {
    dir = tempDir();
    worker = await startMlpWorker();
    h = await startControl(worker, dir, { feed: { sampleMs: 20 } });
    const models = h.port.models.bind(h.port);
    h.port.models = () => {
      reads++;
      return models();
    };
    admin = await adminToken(h);
    await h.control.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await h?.close();
    await worker?.stop(false);
    rmSync(dir, { recursive: true, force: true });
  });

  const listModels = async () => {
    const res = await h.control.app.inject({
      method: 'GET',
      url: '/api/v1/models',
      headers: { authorization: `Bearer ${admin}` },
    });
    assert.equal(res.statusCode, 200);
    return res.json() as { data: { name: string; policy: { weight: number } }[]; seq: number };
  };

  test('no client: no samples; resuming from a seq answered meanwhile brings the changes since', async () => {
    reads = 0;
    await sleep(300);
    assert.equal(reads, 0, 'fifteen sampler periods passed with nobody attached');
    const listed = await listModels();
    await h.port.setPolicy('mlp', { weight: 9 });
    const port = (h.control.app.server.address() as { port: number }).port;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/stream`, ['hloserve.v1', `bearer.${admin}`]);
    type Msg = {
      topic?: string;
      kind?: string;
      seq?: number;
      data?: { upsert?: Record<string, { policy: { weight: number } }> };
    };
    const got: Msg[] = [];
    ws.on('message', (raw) => {
      const m = JSON.parse(String(raw)) as Msg;
      if (m.topic === 'models') got.push(m);
    });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'subscribe', topics: ['models'], since: { models: listed.seq } }));
    while (got.length === 0) await sleep(10);
    assert.equal(got[0]!.kind, 'delta');
    assert.equal(got[0]!.seq, listed.seq + 1);
    assert.equal(got[0]!.data!.upsert!.mlp!.policy.weight, 9, 'the change made while nobody listened');
    await new Promise((r) => {
      ws.once('close', r);
      ws.close();
    });
    while (h.control.context.hub.clientCount > 0) await sleep(10);
  });

  test('a client attached: sampled every period, from the state at attach; detached: quiet again', async () => {
    await h.port.setPolicy('mlp', { weight: 11 });
    const port = (h.control.app.server.address() as { port: number }).port;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/api/v1/stream`, ['hloserve.v1', `bearer.${admin}`]);
    const snapshots: { weight: number }[] = [];
    ws.on('message', (raw) => {
      const m = JSON.parse(String(raw)) as {
        topic?: string;
        kind?: string;
        data?: { items: Record<string, { policy: { weight: number } }> };
      };
      if (m.topic === 'models' && m.kind === 'snapshot') snapshots.push(m.data!.items.mlp!.policy);
    });
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'subscribe', topics: ['models'] }));
    reads = 0;
    await sleep(300);
    // Every period at most; less often once a read of every model costs more than 1 % of a
    // period (feed-reads.test.ts), which a 20 ms period and a slow host can reach.
    assert.ok(reads >= 2, `sampled while attached (${reads} reads in 15 periods)`);
    assert.deepEqual(
      snapshots.map((p) => p.weight),
      [11],
      'the snapshot is of the state when the client came',
    );
    await new Promise((r) => {
      ws.once('close', r);
      ws.close();
    });
    while (h.control.context.hub.clientCount > 0) await sleep(10);
    reads = 0;
    await sleep(300);
    assert.equal(reads, 0);
  });
});
