import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { HookPool, type HookCall } from '../../src/hooks/hook-pool.js';
import { HOOK_LOG_DEFAULTS, type HookLogSettings } from '../../src/hooks/hook-log.js';
import { prepareHookSource } from '../../src/hooks/hook-source.js';
import { checkCallTensors, checkHookTensors, toHostTensor, type HookTensors } from '../../src/hooks/hook-tensor.js';

const dir = mkdtempSync(join(tmpdir(), 'hloserve-hooks-'));
const cache = join(dir, 'cache');
after(() => rmSync(dir, { recursive: true, force: true }));

async function hook(file: string, source: string): Promise<string> {
  const path = join(dir, file);
  writeFileSync(path, source);
  const src = await prepareHookSource({ path, language: file.endsWith('.ts') ? 'ts' : 'js' }, cache);
  return src.url;
}

const x = (): HookTensors => ({ x: { dtype: 'f32', shape: [1, 3], data: new Float32Array([1, 2, 3]) } });
const context = { model: 'm', requestId: 'r1', parameters: {}, deadline: null };
const call = (url: string, over: Partial<HookCall> = {}): HookCall => ({
  url,
  fn: 'preprocess',
  tensors: x(),
  context,
  timeoutMs: 5_000,
  ...over,
});

async function rejectsWith(p: Promise<unknown>, code: string, message: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof ServeError, String(e));
    assert.equal(e.code, code);
    assert.match(e.message, message);
    return true;
  });
}

suite('HookPool', () => {
  const pool = new HookPool({ threads: 2, maxQueued: 4, maxHeapMb: 64, name: 'test hooks' });
  after(() => pool.close());

  test('a pass-through preprocess returns the tensors it was given', async () => {
    const url = await hook('pass.mjs', 'export function preprocess(t, ctx) { return t; }');
    const out = await pool.run(call(url));
    assert.deepEqual([...(out.x!.data as Float32Array)], [1, 2, 3]);
    assert.deepEqual(out.x!.shape, [1, 3]);
  });

  test('model.js is loaded as an ES module and sees the context', async () => {
    const url = await hook(
      'ctx.js',
      `export async function postprocess(t, ctx) {
         return { y: { dtype: 'BYTES', shape: [1], data: [new TextEncoder().encode(ctx.model + ':' + ctx.requestId)] } };
       }`,
    );
    const out = await pool.run(call(url, { fn: 'postprocess' }));
    assert.equal(new TextDecoder().decode((out.y!.data as Uint8Array[])[0]), 'm:r1');
  });

  test('a TypeScript hook is transpiled once per content hash; one that does not compile is a bundle error', async () => {
    const src =
      'export function preprocess(t: any): any { const k: number = 2; return { k: { dtype: "i32", shape: [1], data: new Int32Array([k]) } }; }';
    const a = await hook('a.ts', src);
    const b = await hook('b.ts', src);
    assert.equal(a, b);
    const out = await pool.run(call(a));
    assert.deepEqual([...(out.k!.data as Int32Array)], [2]);
    await rejectsWith(hook('bad.ts', 'export function preprocess( {'), 'HLO_ERR_BUNDLE_INVALID', /does not compile/);
  });

  test('a hook that throws fails only its call; its own INVALID_ARGUMENT code blames the request', async () => {
    const url = await hook(
      'throws.mjs',
      `export function preprocess(t) { if (t.x.shape[0] === 1) throw new TypeError('boom'); return t; }
       export function postprocess() { throw Object.assign(new Error('not an image'), { code: 'INVALID_ARGUMENT' }); }`,
    );
    await rejectsWith(pool.run(call(url)), 'HLO_ERR_HOOK_FAILED', /preprocess hook of m threw TypeError: boom/);
    await rejectsWith(pool.run(call(url, { fn: 'postprocess' })), 'HLO_ERR_INVALID_ARGUMENT', /not an image/);
  });

  test('a hook that never returns is stopped at its limit while other calls are served', async () => {
    const hang = await hook('hang.mjs', 'export function preprocess() { for (;;) {} }');
    const pass = await hook('pass2.mjs', 'export function preprocess(t) { return t; }');
    const restarts = pool.restarts;
    const hung = rejectsWith(
      pool.run(call(hang, { timeoutMs: 300 })),
      'HLO_ERR_HOOK_FAILED',
      /ran past its 300 ms limit/,
    );
    const good = await Promise.all([pool.run(call(pass)), pool.run(call(pass)), pool.run(call(pass))]);
    assert.equal(good.length, 3);
    await hung;
    assert.equal(pool.restarts, restarts + 1);
    assert.ok((await pool.run(call(pass))).x);
  });

  test('the request deadline cuts a hook short with DEADLINE_EXCEEDED', async () => {
    const hang = await hook('hang2.mjs', 'export async function preprocess() { await new Promise(() => {}); }');
    const deadline = Date.now() + 150;
    await rejectsWith(
      pool.run(call(hang, { context: { ...context, deadline } })),
      'HLO_ERR_DEADLINE_EXCEEDED',
      /deadline/,
    );
  });

  test('a hook that allocates without bound fails alone when its thread runs out of heap', async () => {
    const hog = await hook(
      'hog.mjs',
      'export function preprocess() { const keep = []; for (;;) keep.push(new Array(1e5).fill({ a: Math.random() })); }',
    );
    const pass = await hook('pass3.mjs', 'export function preprocess(t) { return t; }');
    const hogged = rejectsWith(
      pool.run(call(hog, { timeoutMs: 30_000 })),
      'HLO_ERR_HOOK_FAILED',
      /ran out of its 64 MiB heap/,
    );
    assert.ok((await pool.run(call(pass))).x);
    await hogged;
    assert.ok((await pool.run(call(pass))).x);
  });

  test('a hook that keeps allocating typed arrays (outside its heap) fails alone at its buffer limit', async () => {
    const guarded = new HookPool({ threads: 1, maxQueued: 4, maxHeapMb: 64, maxBufferMb: 128, name: 'guarded' });
    try {
      const hog = await hook(
        'buffers.mjs',
        'export function preprocess() { const keep = []; for (;;) keep.push(new Float64Array(1e6).fill(1)); }',
      );
      const pass = await hook(
        'pass-buffers.mjs',
        'export function preprocess(t) { const scratch = new Float64Array(1e6); return t; }',
      );
      const rss0 = process.memoryUsage.rss();
      const hogged = rejectsWith(
        guarded.run(call(hog, { timeoutMs: 60_000 })),
        'HLO_ERR_HOOK_FAILED',
        /held more than its 128 MiB of buffers \(hooks.max_buffer_mb\)/,
      );
      // Queued behind the hog on its thread: sent to the fresh one, and served.
      const after = guarded.run(call(pass));
      await hogged;
      assert.ok((await after).x);
      assert.equal(guarded.restarts, 1);
      // Stopped near its limit, not at the machine's: the process grew by far less than a GiB.
      assert.ok(process.memoryUsage.rss() - rss0 < 2 ** 30, `rss grew ${process.memoryUsage.rss() - rss0} bytes`);
    } finally {
      await guarded.close();
    }
  });

  test('a result that cannot cross threads, or a missing export, fails the call clearly', async () => {
    const url = await hook('weird.mjs', 'export function preprocess() { return { f: () => 1 }; }');
    await rejectsWith(pool.run(call(url)), 'HLO_ERR_HOOK_FAILED', /preprocess hook of m threw/);
    await rejectsWith(
      pool.run(call(url, { fn: 'postprocess' })),
      'HLO_ERR_HOOK_FAILED',
      /exports no function "postprocess"/,
    );
  });

  test('a result or error whose reading throws (getters, a throwing then, a message that is no string) fails only its call', async () => {
    const url = await hook(
      'readers.mjs',
      `export function preprocess(t, ctx) {
         switch (ctx.parameters.how) {
           case 'getter': return { get x() { throw new Error('a getter threw'); } };
           case 'then': return { get then() { throw new Error('then threw'); } };
           case 'proxy': return new Proxy({}, { ownKeys() { throw new Error('ownKeys threw'); } });
           case 'message': throw Object.assign(new Error('m'), { message: 5, name: Symbol('n') });
           case 'nothing': throw Object.create(null);
         }
       }`,
    );
    const restarts = pool.restarts;
    const how = (h: string) => pool.run(call(url, { context: { ...context, parameters: { how: h } } }));
    await rejectsWith(how('getter'), 'HLO_ERR_HOOK_FAILED', /threw Error: a getter threw/);
    await rejectsWith(how('then'), 'HLO_ERR_HOOK_FAILED', /threw Error: then threw/);
    await rejectsWith(how('proxy'), 'HLO_ERR_HOOK_FAILED', /threw Error: ownKeys threw/);
    await rejectsWith(how('message'), 'HLO_ERR_HOOK_FAILED', /threw Error: 5/);
    await rejectsWith(how('nothing'), 'HLO_ERR_HOOK_FAILED', /threw Error: hook threw an? object/);
    // Each was the call's failure, not its thread's: no thread was replaced.
    assert.equal(pool.restarts, restarts);
  });

  test('a thread that dies of a thrown value that is not an Error (a timer throwing 5) fails its call; the process goes on', async () => {
    const url = await hook(
      'timer-throws.mjs',
      'export function preprocess() { setTimeout(() => { throw 5; }, 0); return new Promise(() => {}); }',
    );
    const pass = await hook('pass-after-timer.mjs', 'export function preprocess(t) { return t; }');
    const restarts = pool.restarts;
    await rejectsWith(pool.run(call(url)), 'HLO_ERR_HOOK_FAILED', /crashed: hook threw 5/);
    assert.equal(pool.restarts, restarts + 1);
    assert.ok((await pool.run(call(pass))).x);
  });

  test("a hook posting on the thread's parentPort (null, numbers, malformed protocol messages) is ignored", async () => {
    const url = await hook(
      'posts.mjs',
      `import { parentPort } from 'node:worker_threads';
       export function preprocess(t) {
         for (const m of [null, 5, 'x', {}, { type: 'lanes' }]) parentPort.postMessage(m);
         // Shaped like answers, for every id a call of this pool may have had.
         for (let id = 1; id < 200; id++) {
           parentPort.postMessage({ type: 'error', id, error: null });
           parentPort.postMessage({ type: 'exports', id, functions: [1] });
           parentPort.postMessage({ type: 'subcall', id });
         }
         return t;
       }`,
    );
    const stray = pool.strayMessages;
    assert.deepEqual([...((await pool.run(call(url))).x!.data as Float32Array)], [1, 2, 3]);
    // The answer came through its lane, maybe before the messages posted ahead of it were read.
    for (let i = 0; i < 200 && pool.strayMessages - stray < 4 + 3 * 199; i++)
      await new Promise((r) => setTimeout(r, 10));
    assert.equal(pool.strayMessages - stray, 4 + 3 * 199);
    const pass = await hook('pass-after-posts.mjs', 'export function preprocess(t) { return t; }');
    assert.ok((await pool.run(call(pass))).x);
  });

  test("ctx.log writes the engine's JSON lines on stderr, with the model and request id", async () => {
    const url = await hook(
      'logs.mjs',
      "export function preprocess(t, ctx) { ctx.log('saw', t.x.shape); ctx.log.warn('hm'); return t; }",
    );
    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      lines.push(String(chunk));
      return write(chunk, ...rest);
    }) as typeof process.stderr.write;
    try {
      await pool.run(call(url));
      // A thread's stderr reaches this one's asynchronously.
      for (let i = 0; i < 100 && lines.join('').split('\n').length < 3; i++)
        await new Promise((r) => setTimeout(r, 10));
    } finally {
      process.stderr.write = write;
    }
    const records = lines
      .join('')
      .split('\n')
      .filter((l) => l.includes('"msg":"hook"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      records.map((r) => [r.level, r.model, r.requestId, r.text]),
      [
        ['info', 'm', 'r1', 'saw [ 1, 3 ]'],
        ['warn', 'm', 'r1', 'hm'],
      ],
    );
  });

  test('run() calls sub-models through the engine; their errors reach the hook with their status', async () => {
    const url = await hook(
      'meta.mjs',
      `export async function run(t, call, ctx) {
         const a = await call('double', t);
         try { await call('missing', t); } catch (e) { a.err = { dtype: 'BYTES', shape: [1], data: [new TextEncoder().encode(e.code)] }; }
         return a;
       }`,
    );
    const out = await pool.run(
      call(url, {
        fn: 'run',
        subcall: async (model, t) => {
          if (model !== 'double') throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `no model ${model}`);
          const d = t.x!.data as Float32Array;
          return { x: { dtype: 'f32', shape: t.x!.shape, data: d.map((v) => v * 2) } };
        },
      }),
    );
    assert.deepEqual([...(out.x!.data as Float32Array)], [2, 4, 6]);
    assert.equal(new TextDecoder().decode((out.err!.data as Uint8Array[])[0]), 'HLO_ERR_MODEL_NOT_FOUND');
  });

  test("a hook's error code passes through only when it is in the catalogue", async () => {
    const url = await hook(
      'codes.mjs',
      `export function preprocess(t, ctx) {
         throw Object.assign(new Error('told to'), { code: ctx.parameters.code });
       }`,
    );
    const withCode = (code: string) => pool.run(call(url, { context: { ...context, parameters: { code } } }));
    await rejectsWith(withCode('HLO_ERR_MODEL_NOT_FOUND'), 'HLO_ERR_MODEL_NOT_FOUND', /told to/);
    await rejectsWith(withCode('INVALID_ARGUMENT'), 'HLO_ERR_INVALID_ARGUMENT', /told to/);
    // Not a catalogue code: the hook failed, and the status it answers with is one the wire knows.
    for (const code of ['HLO_ERR_NOPE', 'HLO_ERR_', 'hasOwnProperty']) {
      const e = await withCode(code).then(
        () => assert.fail('resolved'),
        (err: unknown) => err,
      );
      assert.ok(e instanceof ServeError);
      assert.equal(e.code, 'HLO_ERR_HOOK_FAILED', code);
      assert.equal(e.httpStatus, 500);
    }
  });

  test('past its threads, their calls in flight and its queue the pool refuses with RESOURCE_EXHAUSTED', async () => {
    const small = new HookPool({ threads: 1, maxQueued: 1, maxHeapMb: 64, name: 'small', perThread: 1 });
    try {
      const slow = await hook(
        'slow.mjs',
        'export async function preprocess(t) { await new Promise((r) => setTimeout(r, 200)); return t; }',
      );
      const a = small.run(call(slow));
      const b = small.run(call(slow));
      await rejectsWith(small.run(call(slow)), 'HLO_ERR_OVERLOADED', /queue is full/);
      await Promise.all([a, b]);
    } finally {
      await small.close();
    }
  });
});

suite('HookPool lanes (the shared-memory path) and messages side by side', () => {
  test('calls too large for a lane, results too large for one, and BYTES all go by message, mixed with lane calls', async () => {
    const pool = new HookPool({ threads: 1, maxQueued: 64, maxHeapMb: 64, name: 'mixed', perThread: 4 });
    try {
      const url = await hook(
        'mixed.mjs',
        `export function preprocess(t) {
           if (t.grow) return { y: { dtype: 'f32', shape: [100000], data: new Float32Array(100000).fill(7) } };
           return t;
         }
         export function postprocess(t) {
           return { b: { dtype: 'BYTES', shape: [1], data: [new TextEncoder().encode(String(t.x.data[0]))] } };
         }`,
      );
      const big = new Float64Array(20_000).map((_, i) => i);
      const calls = Array.from({ length: 40 }, async (_, i) => {
        switch (i % 4) {
          case 0: {
            const out = await pool.run(call(url));
            assert.deepEqual([...(out.x!.data as Float32Array)], [1, 2, 3]);
            break;
          }
          case 1: {
            const out = await pool.run(call(url, { tensors: { x: { dtype: 'f64', shape: [20_000], data: big } } }));
            assert.equal((out.x!.data as Float64Array)[19_999], 19_999);
            break;
          }
          case 2: {
            const grow = { dtype: 'u8' as const, shape: [1], data: new Uint8Array([1]) };
            const out = await pool.run(call(url, { tensors: { ...x(), grow } }));
            assert.equal((out.y!.data as Float32Array).length, 100_000);
            assert.equal((out.y!.data as Float32Array)[99_999], 7);
            break;
          }
          default: {
            const out = await pool.run(call(url, { fn: 'postprocess' }));
            assert.equal(new TextDecoder().decode((out.b!.data as Uint8Array[])[0]), '1');
          }
        }
      });
      await Promise.all(calls);
    } finally {
      await pool.close();
    }
  });

  test('a lane hands the hook tensors of its own: changing them after the call changes nothing it returned', async () => {
    const pool = new HookPool({ threads: 1, maxQueued: 8, maxHeapMb: 64, name: 'own', perThread: 2 });
    try {
      const url = await hook(
        'keep.mjs',
        `let kept = null;
         export function preprocess(t) { if (kept) kept.x.data[0] = 99; kept = t; return t; }`,
      );
      const first = await pool.run(call(url));
      const second = await pool.run(call(url));
      assert.deepEqual([...(first.x!.data as Float32Array)], [1, 2, 3]);
      assert.deepEqual([...(second.x!.data as Float32Array)], [1, 2, 3]);
    } finally {
      await pool.close();
    }
  });
});

suite('checkHookTensors', () => {
  const spec = [{ name: 'y', dtype: 'f32' as const, shape: [null, 3] }];
  test('accepts the declared tensors and refuses wrong names, dtypes, shapes and element counts', () => {
    assert.ok(checkHookTensors('out', { y: { dtype: 'f32', shape: [2, 3], data: new Float32Array(6) } }, spec));
    const bad: [unknown, RegExp][] = [
      [null, /expected an object/],
      [{}, /"y" is missing/],
      [{ y: { dtype: 'f32', shape: [2, 3], data: new Float32Array(6) }, z: 1 }, /unexpected tensor "z"/],
      [{ y: { dtype: 'f64', shape: [2, 3], data: new Float64Array(6) } }, /dtype "f64", expected f32/],
      [{ y: { dtype: 'f32', shape: [2, 4], data: new Float32Array(8) } }, /dimension 1 is 4, expected 3/],
      [{ y: { dtype: 'f32', shape: [6], data: new Float32Array(6) } }, /rank 1, expected 2/],
      [{ y: { dtype: 'f32', shape: [2, 3], data: new Float32Array(5) } }, /5 elements/],
      [{ y: { dtype: 'f32', shape: [2, 3], data: new Int32Array(6) } }, /must be a Float32Array/],
    ];
    for (const [v, re] of bad)
      assert.throws(
        () => checkHookTensors('out', v, spec),
        (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_HOOK_FAILED' && re.test(e.message),
        String(re),
      );
  });
});

suite('checkCallTensors and toHostTensor', () => {
  test("a meta model's call tensors: any names, each well formed, of a dtype the engine knows", () => {
    const ok = {
      a: { dtype: 'f32', shape: [1, 2], data: new Float32Array(2) },
      b: { dtype: 'BYTES', shape: [1], data: [new Uint8Array(3)] },
    };
    assert.equal(checkCallTensors('call', ok), ok);
    const bad: [unknown, RegExp][] = [
      [null, /expected an object/],
      [[1], /expected an object/],
      [{ a: 5 }, /"a" is missing/],
      [{ a: { dtype: 'FP32', shape: [1], data: new Float32Array(1) } }, /dtype "FP32", expected a tensor dtype/],
      [{ a: { dtype: 'toString', shape: [1], data: new Float32Array(1) } }, /dtype "toString"/],
      [{ a: { dtype: 'f32', shape: 2 ** 53 + 2, data: new Float32Array(1) } }, /shape must be an array/],
      [{ a: { dtype: 'f32', shape: [-1], data: new Float32Array(1) } }, /shape must be an array/],
      [{ a: { dtype: 'f32', shape: [3], data: new Float32Array(1) } }, /1 elements for shape \[3\]/],
      [{ a: { dtype: 'BYTES', shape: [1], data: [5] } }, /array of Uint8Array/],
    ];
    for (const [v, re] of bad)
      assert.throws(
        () => checkCallTensors('call', v),
        (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_HOOK_FAILED' && re.test(e.message),
        String(re),
      );
  });

  test('toHostTensor views plain buffers and copies shared ones (a hook thread could still write those)', () => {
    const plain = new Float32Array([1, 2]);
    assert.equal(toHostTensor('a', { dtype: 'f32', shape: [2], data: plain }).data.buffer, plain.buffer);
    const shared = new Float32Array(new SharedArrayBuffer(8)).fill(3);
    const host = toHostTensor('a', { dtype: 'f32', shape: [2], data: shared });
    assert.ok(host.data.buffer instanceof ArrayBuffer);
    assert.deepEqual([...new Float32Array(host.data.buffer, host.data.byteOffset, 2)], [3, 3]);
  });
});

suite('HookPool with several calls in flight per thread', () => {
  test('a hung hook fails alone: the calls queued behind it on its thread are sent to a fresh one', async () => {
    const pool = new HookPool({ threads: 1, maxQueued: 8, maxHeapMb: 64, name: 'one', perThread: 4 });
    try {
      const hang = await hook('hang3.mjs', 'export function preprocess() { for (;;) {} }');
      const pass = await hook('pass4.mjs', 'export function preprocess(t) { return t; }');
      const hung = rejectsWith(pool.run(call(hang, { timeoutMs: 300 })), 'HLO_ERR_HOOK_FAILED', /300 ms limit/);
      // Sent to the same thread behind the hung call: they must not share its fate.
      const behind = await Promise.all([1, 2, 3].map(() => pool.run(call(pass))));
      for (const out of behind) assert.deepEqual([...(out.x!.data as Float32Array)], [1, 2, 3]);
      await hung;
      assert.equal(pool.restarts, 1);
    } finally {
      await pool.close();
    }
  });

  test('gather: calls made in one event-loop turn, not only in one burst, share a hand-over', async () => {
    const pool = new HookPool({ threads: 1, maxQueued: 8, maxHeapMb: 64, name: 'gather' });
    try {
      const pass = await hook('pass6.mjs', 'export function preprocess(t) { return t; }');
      await pool.run(call(pass));
      const apart = async (gather: boolean): Promise<number> => {
        const h0 = pool.handoffs;
        const a = pool.run(call(pass, { gather }));
        // The first call's burst ends here (its microtasks run); the turn goes on.
        await Promise.resolve();
        await Promise.resolve();
        const b = pool.run(call(pass, { gather }));
        await Promise.all([a, b]);
        return pool.handoffs - h0;
      };
      assert.equal(await apart(false), 2);
      assert.equal(await apart(true), 1);
    } finally {
      await pool.close();
    }
  });

  test('calls made together are one hand-over; those done before a later one hangs are answered, not failed', async () => {
    const pool = new HookPool({ threads: 2, maxQueued: 8, maxHeapMb: 64, name: 'burst' });
    try {
      const hang = await hook('hang4.mjs', 'export function postprocess() { for (;;) {} }');
      const pass = await hook('pass5.mjs', 'export function postprocess(t) { return t; }');
      // Load both modules first, so that the burst below runs at once on its thread.
      await Promise.all([pool.run(call(pass, { fn: 'postprocess' })), pool.exportsOf(hang, context, 5_000)]);
      const h0 = pool.handoffs;
      const first = [1, 2, 3].map(() => pool.run(call(pass, { fn: 'postprocess' })));
      const hung = rejectsWith(
        pool.run(call(hang, { fn: 'postprocess', timeoutMs: 300 })),
        'HLO_ERR_HOOK_FAILED',
        /ran past its 300 ms limit/,
      );
      const last = pool.run(call(pass, { fn: 'postprocess' }));
      // The three done before the hang are answered then, not when its limit ends the thread.
      const t0 = performance.now();
      const firstIn = Promise.all(first).then(() => performance.now() - t0);
      for (const out of await Promise.all([...first, last]))
        assert.deepEqual([...(out.x!.data as Float32Array)], [1, 2, 3]);
      await hung;
      const ms = await firstIn;
      assert.ok(ms < 200, `the calls before the hang were answered after ${ms.toFixed(0)} ms`);
      // One ring for the five calls; the one behind the hung call went to a fresh thread.
      assert.equal(pool.handoffs - h0, 2);
      assert.equal(pool.restarts, 1);
    } finally {
      await pool.close();
    }
  });
});

suite('HookPool threads at start', () => {
  test("models' load checks (inspect) share one thread; overlapping calls start the next", async () => {
    const pool = new HookPool({ threads: 2, maxQueued: 8, maxHeapMb: 64, name: 'start hooks' });
    try {
      const a = await hook('start-a.mjs', 'export function preprocess(t) { return t; }');
      const b = await hook('start-b.mjs', 'export function postprocess(t) { return t; }');
      const slow = await hook(
        'start-slow.mjs',
        'export async function preprocess(t) { await new Promise((r) => setTimeout(r, 200)); return t; }',
      );
      const [ea, eb, es] = await Promise.all([
        pool.exportsOf(a, context, 5_000),
        pool.exportsOf(b, context, 5_000),
        pool.exportsOf(slow, context, 5_000),
      ]);
      assert.deepEqual([ea, eb, es], [['preprocess'], ['postprocess'], ['preprocess']]);
      assert.equal(pool.threadCount, 1, 'three load checks at once started one thread');
      // A call made while another still runs (a later turn, not one burst) starts the second thread.
      const first = pool.run(call(slow));
      await new Promise((r) => setTimeout(r, 50));
      await Promise.all([first, pool.run(call(a))]);
      assert.equal(pool.threadCount, 2);
    } finally {
      await pool.close();
    }
  });
});

suite('HookPool waiting on the engine thread', () => {
  test('an engine with nothing else in hand waits for the hand-over on its thread; one with more does not', async () => {
    // The first call, while the thread starts, is not waited for: a wait would run out.
    let inHand = 2;
    const pool = new HookPool({ threads: 1, maxQueued: 8, maxHeapMb: 64, name: 'wait', engineInFlight: () => inHand });
    try {
      const pass = await hook('wait-pass.mjs', 'export function preprocess(t) { return t; }');
      await pool.run(call(pass));
      inHand = 1;
      const tried = () => pool.waits + pool.waitsRunOut;
      const [t0, w0, n0] = [tried(), pool.waits, pool.laneNotes];
      const out = await pool.run(call(pass));
      assert.deepEqual([...(out.x!.data as Float32Array)], [1, 2, 3]);
      // Whether the thread answered within the bound depends on the machine; either way one wait.
      assert.equal(tried() - t0, 1);
      if (pool.waits > w0) assert.equal(pool.laneNotes, n0, 'a wait that was answered needs no note');
      inHand = 2;
      const [t1, n1] = [tried(), pool.laneNotes];
      await pool.run(call(pass));
      assert.equal(tried(), t1, 'another request in hand: the event loop may be needed');
      assert.equal(pool.laneNotes - n1, 1);
    } finally {
      await pool.close();
    }
  });

  test('a wait that runs out leaves the call to the note, and the next lone call to the note too', async () => {
    let inHand = 2;
    const pool = new HookPool({
      threads: 1,
      maxQueued: 8,
      maxHeapMb: 64,
      name: 'run out',
      engineInFlight: () => inHand,
    });
    try {
      const slow = await hook(
        'wait-slow.mjs',
        `export function preprocess(t) { return t; }
         export async function postprocess(t) { await new Promise((r) => setTimeout(r, 50)); return t; }`,
      );
      await pool.run(call(slow));
      inHand = 1;
      const [r0, w0, n0] = [pool.waitsRunOut, pool.waits, pool.laneNotes];
      const out = await pool.run(call(slow, { fn: 'postprocess' }));
      assert.deepEqual([...(out.x!.data as Float32Array)], [1, 2, 3]);
      assert.equal(pool.waitsRunOut - r0, 1);
      assert.equal(pool.waits, w0);
      assert.equal(pool.laneNotes - n0, 1, 'the thread noted it once done');
      const tried = () => pool.waits + pool.waitsRunOut;
      const t1 = tried();
      await pool.run(call(slow));
      assert.equal(tried(), t1, 'the call after a wait that ran out goes to the note');
      await pool.run(call(slow));
      assert.equal(tried() - t1, 1, 'the one after that is waited for again');
    } finally {
      await pool.close();
    }
  });

  test('a lone call waited for whose hook throws, hangs or returns a wrong shape fails only itself', async () => {
    const pool = new HookPool({
      threads: 1,
      maxQueued: 8,
      maxHeapMb: 64,
      name: 'wait faults',
      engineInFlight: () => 1,
    });
    try {
      const pass = await hook('wait-pass2.mjs', 'export function postprocess(t) { return t; }');
      const bad = await hook(
        'wait-bad.mjs',
        `export function postprocess(t, ctx) {
           if (ctx.requestId === 'throw') throw new RangeError('asked to throw');
           if (ctx.requestId === 'hang') for (;;) {}
           return { x: { dtype: 'f32', shape: [1, 2], data: new Float32Array(2) } };
         }`,
      );
      const post = (url: string, requestId = 'r1', timeoutMs = 5_000) =>
        pool.run(call(url, { fn: 'postprocess', context: { ...context, requestId }, timeoutMs }));
      await Promise.all([post(pass), pool.exportsOf(bad, context, 5_000)]);
      const good = async () => assert.deepEqual([...((await post(pass)).x!.data as Float32Array)], [1, 2, 3]);
      await good();
      await rejectsWith(post(bad, 'throw'), 'HLO_ERR_HOOK_FAILED', /threw RangeError: asked to throw/);
      await good();
      // The pool returns what the hook made; the manifest check (ModelHooks) refuses it.
      const shaped = await post(bad);
      assert.throws(
        () => checkHookTensors('postprocess result', shaped, [{ name: 'x', dtype: 'f32', shape: [1, 3] }]),
        /dimension 1 is 2, expected 3/,
      );
      await good();
      await rejectsWith(post(bad, 'hang', 300), 'HLO_ERR_HOOK_FAILED', /ran past its 300 ms limit/);
      assert.equal(pool.restarts, 1);
      await good();
    } finally {
      await pool.close();
    }
  });
});

suite('HookPool.preload', () => {
  const setup = (maxHeapMb: number, log: HookLogSettings = HOOK_LOG_DEFAULTS) => ({
    maxHeapMb,
    maxBufferMb: null,
    log,
  });
  const threadIdHook = () =>
    hook(
      `thread-id-${Math.random().toString(36).slice(2)}.mjs`,
      `import { threadId } from 'node:worker_threads';
       export function preprocess() { return { id: { dtype: 'f32', shape: [1], data: new Float32Array([threadId]) } }; }`,
    );
  const threadOf = async (pool: HookPool, url: string): Promise<number> =>
    ((await pool.run(call(url))).id!.data as Float32Array)[0]!;

  test('the first pool with its shape takes the preloaded thread; discardPreloaded then leaves it running', async () => {
    // The engine's log settings, as a start passes them both ways (a copy, not the same object).
    const id = HookPool.preload(setup(64, { level: 'warn', fields: { worker: 'w0' } }));
    assert.equal(HookPool.preload(setup(64)), id, 'one preloaded thread at a time');
    const log = { level: 'warn' as const, fields: { worker: 'w0' } };
    const pool = new HookPool({ threads: 2, maxQueued: 4, maxHeapMb: 64, name: 'preloaded', log });
    try {
      const url = await threadIdHook();
      assert.equal(await threadOf(pool, url), id);
      assert.equal(pool.threadCount, 1);
      HookPool.discardPreloaded();
      assert.equal(await threadOf(pool, url), id, 'the pool keeps its thread');
      assert.equal(pool.restarts, 0);
    } finally {
      await pool.close();
    }
  });

  test('a pool of another heap limit starts its own thread; the preloaded one is ended', async () => {
    const id = HookPool.preload(setup(32));
    const pool = new HookPool({ threads: 1, maxQueued: 4, maxHeapMb: 64, name: 'not preloaded' });
    try {
      assert.notEqual(await threadOf(pool, await threadIdHook()), id);
      HookPool.discardPreloaded();
      const next = HookPool.preload(setup(64));
      assert.notEqual(next, id, 'a new preload after the discard starts a new thread');
      HookPool.discardPreloaded();
    } finally {
      await pool.close();
    }
  });
});
