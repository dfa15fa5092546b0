import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { defaultConfig, workerSettings } from '../../src/config/node-config.js';
import { createLogger } from '../../src/log.js';
import { Worker } from '../../src/worker/worker.js';
import { MLP_MANIFEST, mlpRequest, removeDir, tempDir, writeFiles, writeMlpBundle } from '../bundle/fixtures.js';

// The fixture MLP: x f32 [n,4] -> y f32 [n,3]. Its preprocess misbehaves as the request asks.
const FAULTY = `
export function preprocess({ x }, ctx) {
  switch (ctx.parameters.mode) {
    case 'throw': throw new RangeError('asked to throw');
    case 'hang': for (;;) {}
    case 'shape': return { x: { dtype: 'f32', shape: [x.shape[0], 5], data: new Float32Array(x.shape[0] * 5) } };
    case 'oom': { const keep = []; for (;;) keep.push(new Array(1e5).fill({ v: Math.random() })); }
    case 'oom-buffers': { const keep = []; for (;;) keep.push(new Float64Array(1e6).fill(1)); }
    case 'bad-input': throw Object.assign(new Error('x must be positive'), { code: 'INVALID_ARGUMENT' });
    default: return { x };
  }
}
export function postprocess({ y }) { return { y }; }
`;
// Postprocess only, misbehaving for the request that asks: a batch's postprocess calls go to the
// hook thread together, and a bad one must still fail alone.
const POST_FAULTY = `
export function postprocess({ y }, ctx) {
  switch (ctx.parameters.post) {
    case 'throw': throw new RangeError('asked to throw');
    case 'hang': for (;;) {}
    case 'shape': return { y: { dtype: 'f32', shape: [y.shape[0], 4], data: new Float32Array(y.shape[0] * 4) } };
    case 'oom': { const keep = []; for (;;) keep.push(new Array(1e5).fill({ v: Math.random() })); }
    default: return { y };
  }
}
`;
const META_MANIFEST = (calls: string[]) => `format_version: "2.0"
kind: meta
meta: {calls: [${calls.join(', ')}]}
client_inputs:
  - {name: x, dtype: f32, shape: fn, dims: {f: 4}}
client_outputs:
  - {name: y, dtype: f32, shape: kn, dims: {k: 3}}
`;
const META_HOOKS = `
export async function run({ x }, call, ctx) {
  if (ctx.parameters.target) return await call(ctx.parameters.target, { x });
  let out = await call('faulty', { x });
  for (let i = 1; i < Number(ctx.parameters.calls ?? 1); i++) out = await call('faulty', { x });
  if (ctx.parameters.linger) await new Promise((r) => setTimeout(r, Number(ctx.parameters.linger)));
  return out;
}
`;

const request = mlpRequest;

const ctx = (deadline: number | null = null) => ({ deadline, signal: new AbortController().signal });
const fails = (code: string, message: RegExp) => (e: unknown) => {
  assert.ok(e instanceof ServeError, String(e));
  assert.equal(e.code, code, e.message);
  assert.match(e.message, message);
  return true;
};

async function startWorker(repo: string, hooks: Partial<{ enabled: boolean }> = {}): Promise<Worker> {
  const settings = workerSettings(defaultConfig(repo));
  return Worker.start({
    modelRepo: repo,
    settings: {
      ...settings,
      cacheDir: join(repo, '.state'),
      // A batching window, so the good and the bad requests below are queued together.
      scheduler: { ...settings.scheduler, maxQueueDelayUs: 20_000 },
      hooks: { ...settings.hooks, threads: 2, timeoutMs: 400, maxHeapMb: 64, maxBufferMb: 128, ...hooks },
    },
    log: createLogger('silent'),
  });
}

suite('a worker serving bundles with hooks', () => {
  let repo: string;
  let worker: Worker;
  before(async () => {
    repo = await tempDir('hloserve-hooks-');
    await writeMlpBundle(repo, 'faulty', { 'model.mjs': FAULTY });
    await writeMlpBundle(repo, 'postfaulty', { 'model.mjs': POST_FAULTY });
    await writeFiles(join(repo, 'pipeline'), {
      'manifest.yaml': META_MANIFEST(['faulty', 'absent']),
      'model.mjs': META_HOOKS,
    });
    worker = await startWorker(repo);
  });
  after(async () => {
    await worker.stop(false);
    await removeDir(repo);
  });

  for (const [mode, code, message] of [
    ['throw', 'HLO_ERR_HOOK_FAILED', /preprocess hook of faulty threw RangeError: asked to throw/],
    ['hang', 'HLO_ERR_HOOK_FAILED', /ran past its 400 ms limit/],
    ['shape', 'HLO_ERR_HOOK_FAILED', /tensor "x": dimension 1 is 5, expected 4/],
    // On a busy machine filling 64 MiB can take longer than the 400 ms limit: either stops it alone.
    ['oom', 'HLO_ERR_HOOK_FAILED', /ran out of its 64 MiB heap|ran past its 400 ms limit/],
    // Typed arrays live outside the heap: the buffer limit stops this one.
    ['oom-buffers', 'HLO_ERR_HOOK_FAILED', /held more than its 128 MiB of buffers|ran past its 400 ms limit/],
    ['bad-input', 'HLO_ERR_INVALID_ARGUMENT', /x must be positive/],
  ] as const) {
    test(`a preprocess that fails (${mode}) fails only its request; good ones in the same window succeed`, async () => {
      const bad = assert.rejects(worker.infer(request('faulty', 1, { mode }), ctx()), fails(code, message));
      const good = await Promise.all([1, 2, 3].map((n) => worker.infer(request('faulty', n), ctx())));
      for (const [i, r] of good.entries()) assert.deepEqual(r.outputs[0]!.shape, [i + 1, 3]);
      await bad;
      assert.deepEqual((await worker.infer(request('faulty', 2), ctx())).outputs[0]!.shape, [2, 3]);
    });
  }

  for (const [mode, message] of [
    ['throw', /postprocess hook of postfaulty threw RangeError: asked to throw/],
    ['shape', /tensor "y": dimension 1 is 4, expected 3/],
    ['hang', /ran past its 400 ms limit/],
    ['oom', /ran out of its 64 MiB heap|ran past its 400 ms limit/],
  ] as const) {
    test(`a coalesced batch's postprocess is one hand-over to a hook thread; a bad one (${mode}) fails alone`, async () => {
      const executions = () => worker.modelStatistics('postfaulty', '')[0]!.execution_count;
      const counters = () => worker.hookPoolCounters!;
      const [ex0, c0] = [executions(), counters()];
      // Four 1-row requests queued together: the fixture's batch of 4 runs them in one execution.
      const bad = assert.rejects(
        worker.infer(request('postfaulty', 1, { post: mode }), ctx()),
        fails('HLO_ERR_HOOK_FAILED', message),
      );
      const good = await Promise.all([1, 2, 3].map(() => worker.infer(request('postfaulty', 1), ctx())));
      for (const r of good) assert.deepEqual(r.outputs[0]!.shape, [1, 3]);
      await bad;
      const c1 = counters();
      assert.equal(executions() - ex0, 1, 'the four requests ran as one batch');
      if (mode === 'throw' || mode === 'shape') {
        // A hook that fails without taking its thread leaves the hand-over whole.
        assert.equal(c1.handoffs - c0.handoffs, 1, 'one hand-over for the batch');
        assert.equal(c1.restarts, c0.restarts);
      } else {
        // The calls behind the stuck one are handed to a fresh thread; nothing else fails.
        assert.equal(c1.restarts - c0.restarts, 1);
      }
      assert.deepEqual((await worker.infer(request('postfaulty', 2), ctx())).outputs[0]!.shape, [2, 3]);
    });
  }

  test('a meta model serves through its sub-model (declaring a call it never makes is fine)', async () => {
    const direct = await worker.infer(request('faulty', 2), ctx());
    const viaMeta = await worker.infer(request('pipeline', 2), ctx());
    assert.deepEqual(viaMeta.outputs[0]!.shape, [2, 3]);
    assert.deepEqual(viaMeta.outputs[0]!.data, direct.outputs[0]!.data);
  });

  test('statistics: a meta counts as one request; its queue and compute are the sums of its sub-calls', async () => {
    const stats = (name: string) => worker.modelStatistics(name, '')[0]!;
    const [meta0, sub0] = [stats('pipeline'), stats('faulty')];
    const lingerMs = 150;
    await worker.infer(request('pipeline', 2, { calls: 3, linger: lingerMs }), ctx());
    const [meta1, sub1] = [stats('pipeline'), stats('faulty')];
    const delta = (a: { count: number; ns: number }, b: { count: number; ns: number }) => ({
      count: b.count - a.count,
      ns: b.ns - a.ns,
    });
    const m = (k: 'success' | 'queue' | 'compute_infer') => delta(meta0.inference_stats[k], meta1.inference_stats[k]);
    const s = (k: 'success' | 'queue' | 'compute_infer') => delta(sub0.inference_stats[k], sub1.inference_stats[k]);
    assert.equal(m('success').count, 1, 'one request');
    assert.equal(meta1.inference_count - meta0.inference_count, 2, 'its rows, once');
    assert.equal(s('success').count, 3, 'three sub-calls');
    // Each side rounds its own seconds to ns once per request: up to a nanosecond per sub-call.
    assert.ok(
      Math.abs(m('compute_infer').ns - s('compute_infer').ns) <= 3,
      `${m('compute_infer').ns} vs ${s('compute_infer').ns}`,
    );
    assert.ok(Math.abs(m('queue').ns - s('queue').ns) <= 3, `${m('queue').ns} vs ${s('queue').ns}`);
    assert.ok(m('compute_infer').ns > 0);
    assert.ok(m('success').ns >= lingerMs * 1e6, 'its total is its whole time, run hook included');
    assert.ok(m('compute_infer').ns < m('success').ns - lingerMs * 1e6 * 0.9, 'the linger is not compute');
  });

  test('a meta whose deadline passes mid-pipeline answers DEADLINE_EXCEEDED and leaves nothing queued', async () => {
    const deadline = worker.scheduler.now() + 250;
    await assert.rejects(
      worker.infer(request('pipeline', 1, { linger: 2000 }), ctx(deadline)),
      fails('HLO_ERR_DEADLINE_EXCEEDED', /deadline/),
    );
    assert.equal(worker.scheduler.queueDepth(worker.registry.get('faulty')!.queue!), 0);
  });

  test('a meta calling a model its manifest does not declare, or a declared one that is absent, fails clearly', async () => {
    await assert.rejects(
      worker.infer(request('pipeline', 1, { target: 'mlp' }), ctx()),
      fails('HLO_ERR_HOOK_FAILED', /called 'mlp', which its meta.calls does not declare/),
    );
    await assert.rejects(
      worker.infer(request('pipeline', 1, { target: 'absent' }), ctx()),
      fails('HLO_ERR_MODEL_NOT_FOUND', /absent/),
    );
  });
});

suite('hooks that load beside the executables', () => {
  test('a hooks module that does not import fails its model, and what was compiled and uploaded for it is freed', async () => {
    const repo = await tempDir('hloserve-hookfail-');
    try {
      await writeMlpBundle(repo, 'plain');
      await writeMlpBundle(repo, 'broken', {
        'manifest.yaml': MLP_MANIFEST,
        'model.mjs': 'export function preprocess(x) { return x; }\nthrow new Error("no import for you");\n',
      });
      const worker = await startWorker(repo);
      try {
        const broken = worker.repositoryIndex(false).find((m) => m.name === 'broken');
        assert.equal(broken?.state, 'UNAVAILABLE');
        assert.match(broken?.reason ?? '', /does not load: .*no import for you/);
        // Only the plain model's executables and weights are alive: the broken one's, compiled and
        // uploaded while its hooks failed, were freed.
        const plain = worker.registry.get('plain')!.current!;
        // (Executables are freed on a background thread: wait for the ledger to say so.)
        for (let i = 0; i < 100 && worker.runtime.ledger().liveExecutables > plain.batchSizes.length; i++)
          await new Promise((r) => setTimeout(r, 20));
        assert.equal(worker.runtime.ledger().liveExecutables, plain.batchSizes.length);
        assert.deepEqual((await worker.infer(request('plain', 1), ctx())).outputs[0]!.shape, [1, 3]);
      } finally {
        await worker.stop(false);
      }
    } finally {
      await removeDir(repo);
    }
  });
});

suite('hooks.enabled: false', () => {
  test('refuses bundles with hooks, with the reason, and serves the rest', async () => {
    const repo = await tempDir('hloserve-nohooks-');
    try {
      await writeMlpBundle(repo, 'plain');
      await writeMlpBundle(repo, 'hooked', { 'manifest.yaml': MLP_MANIFEST, 'model.mjs': FAULTY });
      const worker = await startWorker(repo, { enabled: false });
      try {
        const index = worker.repositoryIndex(false);
        const hooked = index.find((m) => m.name === 'hooked');
        assert.equal(hooked?.state, 'UNAVAILABLE');
        assert.match(hooked?.reason ?? '', /refuses bundle hooks \(hooks.enabled: false/);
        assert.deepEqual((await worker.infer(request('plain', 1), ctx())).outputs[0]!.shape, [1, 3]);
      } finally {
        await worker.stop(false);
      }
    } finally {
      await removeDir(repo);
    }
  });
});
