import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { type Client, credentials, type ServiceError, status } from '@grpc/grpc-js';
import type { ModelControlMode } from '@hloserve/engine/config/types';
import { defaultConfig, workerSettings } from '@hloserve/engine/config/node-config';
import type { LifecycleEvent } from '@hloserve/engine/registry/lifecycle-events';
import { createLogger } from '@hloserve/engine/log';
import { serve } from '@hloserve/engine/serve';
import { GRPCInferenceClient } from '@hloserve/proto';
import { ControlServiceClient, Residency, ResidencyMode } from '@hloserve/proto/control';
import { Fp32Client } from '../src/grpc-infer.js';
import { TAG_WIDTH, writeTaggedBundle } from '../src/tagged-bundle.js';

type Call = (req: unknown, cb: (err: ServiceError | null, res: unknown) => void) => void;

/** Promise form of a grpc-js unary method. */
function rpc<T>(client: Client, method: string, req: unknown): Promise<T> {
  const fn = (client as unknown as Record<string, Call>)[method]!.bind(client);
  return new Promise((resolve, reject) => fn(req, (err, res) => (err ? reject(err) : resolve(res as T))));
}

const code = (c: status) => (e: unknown) => (e as ServiceError).code === c;

async function start(mode: ModelControlMode, unloadGraceSeconds = 5) {
  const repo = mkdtempSync(join(tmpdir(), `hlo-${mode}-`));
  writeTaggedBundle(repo, 'a', 7);
  writeTaggedBundle(repo, 'b', 8);
  const base = workerSettings(defaultConfig(repo));
  const server = await serve(
    repo,
    {
      ...base,
      modelControlMode: mode,
      modelUnloadGraceSeconds: unloadGraceSeconds,
      endpoints: { ...base.endpoints, host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1, consolePort: -1 },
    },
    createLogger('silent'),
  );
  const url = `127.0.0.1:${server.ports.grpc}`;
  return {
    repo,
    server,
    kserve: new GRPCInferenceClient(url, credentials.createInsecure()) as unknown as Client,
    control: new ControlServiceClient(url, credentials.createInsecure()) as unknown as Client,
    infer: new Fp32Client(url),
    async stop() {
      this.kserve.close();
      this.control.close();
      this.infer.close();
      await server.stop(false);
      rmSync(repo, { recursive: true, force: true });
    },
  };
}

const load = (c: Client, name: string) =>
  rpc(c, 'repositoryModelLoad', { repositoryName: '', modelName: name, parameters: new Map() });
const unload = (c: Client, name: string) =>
  rpc(c, 'repositoryModelUnload', { repositoryName: '', modelName: name, parameters: new Map() });

suite('explicit mode: the repository RPCs and ControlService decide', () => {
  let s: Awaited<ReturnType<typeof start>>;
  before(async () => (s = await start('explicit', 0.3)));
  after(() => s.stop());

  test('nothing loads on its own; RepositoryModelLoad loads; weights are resident where the control plane put them', async () => {
    assert.deepEqual(s.server.worker.repositoryIndex(false), []);
    await load(s.kserve, 'a');
    assert.deepEqual([...(await s.infer.infer('a', 'x', [1, TAG_WIDTH], new Float32Array(TAG_WIDTH)))], [7, 7, 7, 7]);
    const st = await rpc<{
      residencyMode: ResidencyMode;
      discipline: string;
      models: {
        name: string;
        residency: Residency;
        deviceResident: boolean;
        maxBatchSize: number;
        batchAxis: number;
      }[];
    }>(s.control, 'modelControlStatus', {});
    assert.equal(st.residencyMode, ResidencyMode.RESIDENCY_MODE_EXTERNALLY_MANAGED);
    assert.equal(st.discipline, 'fair');
    assert.equal(st.models.length, 1);
    const a = st.models[0]!;
    assert.deepEqual(
      [a.name, a.residency, a.deviceResident, a.maxBatchSize, a.batchAxis],
      ['a', Residency.RESIDENCY_DEVICE, true, 4, 1],
    );
  });

  test('SetModelResidency, SetModelPolicy and CompactMemory, with their error statuses', async () => {
    const r = await rpc<{ residency: Residency }>(s.control, 'setModelResidency', {
      name: 'a',
      target: Residency.RESIDENCY_UNPINNED,
    });
    assert.equal(r.residency, Residency.RESIDENCY_UNPINNED);
    await assert.rejects(
      rpc(s.control, 'setModelResidency', { name: 'a', target: Residency.RESIDENCY_UNSPECIFIED }),
      code(status.INVALID_ARGUMENT),
    );
    await assert.rejects(
      rpc(s.control, 'setModelResidency', { name: 'nope', target: Residency.RESIDENCY_SYSTEM }),
      code(status.NOT_FOUND),
    );
    const p = await rpc<{ name: string; weight: number }>(s.control, 'setModelPolicy', { name: 'a', weight: 3 });
    assert.deepEqual([p.name, p.weight], ['a', 3]);
    assert.equal(
      s.server.worker.scheduler.stats(s.server.worker.registry.get('a')!.queue)!.weight,
      3,
      'the scheduler uses the new weight',
    );
    await assert.rejects(rpc(s.control, 'setModelPolicy', { name: 'a', weight: -1 }), code(status.INVALID_ARGUMENT));
    await assert.rejects(rpc(s.control, 'setModelPolicy', { name: 'nope', weight: 1 }), code(status.NOT_FOUND));
    const c = await rpc<{ reloadedModels: string[]; residentBytesAfter: number }>(s.control, 'compactMemory', {
      reloadModels: ['a'],
    });
    assert.deepEqual(c.reloadedModels, ['a']);
    assert.equal(c.residentBytesAfter, TAG_WIDTH * 4, "a's weights are back, nothing else");
    await assert.rejects(rpc(s.control, 'compactMemory', { reloadModels: ['nope'] }), code(status.NOT_FOUND));
  });

  test('the event stream numbers what happened, and a subscriber resumes from a sequence number', async () => {
    const all = s.server.control.events(0);
    assert.deepEqual(
      all.map((e) => e.seq),
      all.map((_, i) => i + 1),
    );
    const types = all.map((e) => e.type);
    for (const t of ['loading', 'loaded', 'residency-changed'] as const) assert.ok(types.includes(t), t);
    const seen: LifecycleEvent[] = [];
    const last = s.server.control.lastSeq;
    const off = s.server.control.subscribe(last - 1, (e) => seen.push(e));
    await load(s.kserve, 'b');
    off();
    assert.deepEqual(
      seen.map((e) => [e.seq, e.type]),
      [
        [last, all[all.length - 1]!.type],
        [last + 1, 'loading'],
        [last + 2, 'loaded'],
      ],
    );
  });

  test('unload with queued requests: they get the grace, then NOT_FOUND naming the unload', async () => {
    // A batching window far longer than the grace keeps the requests queued.
    await s.server.control.setPolicy('b', { maxQueueDelayUs: 60_000_000 });
    // Their answers arrive while the unload is still running: held as outcomes, asserted after.
    const queued = [1, 2].map(() =>
      s.infer.infer('b', 'x', [1, TAG_WIDTH], new Float32Array(TAG_WIDTH)).then(
        () => null,
        (e: ServiceError) => e,
      ),
    );
    const worker = s.server.worker;
    const queueB = worker.registry.get('b')!.queue!;
    while (worker.scheduler.queueDepth(queueB) < 2) await new Promise((r) => setTimeout(r, 5));
    const t0 = performance.now();
    await unload(s.kserve, 'b');
    assert.ok(performance.now() - t0 >= 250, 'the unload waited for the grace');
    for (const e of await Promise.all(queued)) {
      assert.equal(e?.code, status.NOT_FOUND);
      assert.match(e.details, /'b' was unloaded/);
    }
    const ev = s.server.control.events(0).filter((e) => e.type === 'unloaded' && e.model === 'b');
    assert.deepEqual(
      ev.map((e) => e.type === 'unloaded' && e.dropped),
      [2],
    );
    await assert.rejects(s.infer.infer('b', 'x', [1, TAG_WIDTH], new Float32Array(TAG_WIDTH)), /NOT_FOUND/);
  });

  test('unload with queued requests that finish within the grace: they are served', async () => {
    await load(s.kserve, 'b');
    await s.server.control.setPolicy('b', { maxQueueDelayUs: 100_000 });
    const queued = [1, 2].map(() => s.infer.infer('b', 'x', [1, TAG_WIDTH], new Float32Array(TAG_WIDTH)));
    const queueB = s.server.worker.registry.get('b')!.queue!;
    while (s.server.worker.scheduler.queueDepth(queueB) < 2) await new Promise((r) => setTimeout(r, 5));
    await unload(s.kserve, 'b');
    for (const q of queued) assert.deepEqual([...(await q)], [8, 8, 8, 8]);
  });
});

suite('static mode: the startup set', () => {
  let s: Awaited<ReturnType<typeof start>>;
  before(async () => (s = await start('static')));
  after(() => s.stop());

  test('serves the repository; load, unload and SetModelResidency are refused with FAILED_PRECONDITION', async () => {
    assert.deepEqual(
      s.server.worker.repositoryIndex(true).map((m) => m.name),
      ['a', 'b'],
    );
    await assert.rejects(load(s.kserve, 'a'), code(status.FAILED_PRECONDITION));
    await assert.rejects(unload(s.kserve, 'a'), code(status.FAILED_PRECONDITION));
    await assert.rejects(
      rpc(s.control, 'setModelResidency', { name: 'a', target: Residency.RESIDENCY_DEVICE }),
      code(status.FAILED_PRECONDITION),
    );
    const st = await rpc<{ residencyMode: ResidencyMode }>(s.control, 'modelControlStatus', {});
    assert.equal(st.residencyMode, ResidencyMode.RESIDENCY_MODE_SELF_MANAGED);
    assert.deepEqual([...(await s.infer.infer('b', 'x', [1, TAG_WIDTH], new Float32Array(TAG_WIDTH)))], [8, 8, 8, 8]);
  });
});
