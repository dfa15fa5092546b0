import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { ERROR_CATALOGUE } from '@hloserve/common/errors';
import { defaultConfig, workerSettings } from '../../src/config/node-config.js';
import { createLogger } from '../../src/log.js';
import { buildHttpServer } from '../../src/transports/http-server.js';
import { Worker } from '../../src/worker/worker.js';
import { examples } from '../transports/surface.js';
import { CODES, HTTP_CODES, withTimeout, type Target } from './surfaces.js';

/**
 * Fuzzing what bundle hooks hand back to the engine. A hooks module is code the operator
 * installed, but whatever it returns or throws must still fail only its own request, with a
 * catalogue status, and never a coalesced batch or the process. The model `fz` (the example mlp
 * with hooks) and the meta model `fzmeta` (calling mlp, fz and a model that is not loaded) run
 * hooks that do what the request's parameters describe: return, throw or reject a value built
 * from a small description (numbers, strings, typed arrays of any kind and length, shared and
 * offset views, tensors with any dtype and shape, objects that cannot be cloned, errors with any
 * name, message and code), or, in a meta model's run, call a model with any name and tensors.
 */

/** A value as the hook builds it; plain JSON stands for itself. */
export type Desc =
  | null
  | boolean
  | number
  | string
  | readonly Desc[]
  | { readonly $: 'ta'; readonly t: string; readonly n: number; readonly shared?: boolean; readonly off?: number }
  | { readonly $: 'bytes'; readonly lengths: readonly number[] }
  | { readonly $: 'input'; readonly name: string }
  | { readonly $: 'inputs' }
  | { readonly $: 'tensor'; readonly dtype: Desc; readonly shape: Desc; readonly data: Desc }
  | { readonly $: 'obj'; readonly entries: readonly (readonly [string, Desc])[] }
  | { readonly $: 'num'; readonly v: 'nan' | 'inf' | 'ninf' | 'negz' | 'unsafe' | 'huge' }
  | { readonly $: 'bigint'; readonly v: string }
  | { readonly $: 'odd'; readonly v: 'fn' | 'sym' | 'getter' | 'proxy' | 'cycle' | 'date' | 'map' | 'class' | 'undef' }
  | {
      readonly $: 'error';
      readonly kind: string;
      readonly message: Desc;
      readonly code?: Desc;
      readonly name?: Desc;
      readonly plain?: boolean;
    };

/** What one hook does. */
export type Act =
  | { readonly act: 'return' | 'throw' | 'reject' | 'async'; readonly v: Desc }
  /** Posts values on the thread's parentPort (the pool's own port), then passes its inputs through. */
  | { readonly act: 'post'; readonly msgs: readonly Desc[] }
  /** Allocates without bound: typed arrays (outside the heap) or arrays (inside it). */
  | { readonly act: 'hog'; readonly buffers: boolean }
  | { readonly act: 'call'; readonly model: Desc; readonly tensors: Desc; readonly then: 'keep' | 'rethrow' | Desc };

/** Which hook misbehaves, and how; the other steps pass their tensors through. */
export interface HookInput {
  readonly model: 'fz' | 'fzmeta';
  readonly pre?: Act;
  readonly post?: Act;
  readonly run?: Act;
}

// The interpreter, in the hooks module itself (a hook thread imports it).
const HOOKS = `
import { parentPort } from 'node:worker_threads';
const CTORS = { Uint8Array, Uint8ClampedArray, Int8Array, Int16Array, Uint16Array, Int32Array, Uint32Array,
  Float32Array, Float64Array, BigInt64Array, BigUint64Array };
const NUM = { nan: NaN, inf: Infinity, ninf: -Infinity, negz: -0, unsafe: 2 ** 53 + 2, huge: 1e300 };
function build(d, inputs) {
  if (d === null || typeof d !== 'object') return d;
  if (Array.isArray(d)) return d.map((x) => build(x, inputs));
  switch (d.$) {
    case 'ta': {
      if (d.t === 'DataView') return new DataView(new ArrayBuffer(d.n));
      if (d.t === 'ArrayBuffer') return new ArrayBuffer(d.n);
      if (d.t === 'Array') return new Array(d.n).fill(0.5);
      const C = CTORS[d.t];
      const a = d.shared ? new C(new SharedArrayBuffer(d.n * C.BYTES_PER_ELEMENT)) : new C(d.n);
      return d.off ? a.subarray(Math.min(d.off, d.n)) : a;
    }
    case 'bytes': return d.lengths.map((n) => new Uint8Array(n));
    case 'input': return inputs[d.name];
    case 'inputs': return inputs;
    case 'tensor': return { dtype: build(d.dtype, inputs), shape: build(d.shape, inputs), data: build(d.data, inputs) };
    case 'obj': { const o = {}; for (const [k, v] of d.entries) o[k] = build(v, inputs); return o; }
    case 'num': return NUM[d.v];
    case 'bigint': return BigInt(d.v);
    case 'odd': switch (d.v) {
      case 'fn': return () => 1;
      case 'sym': return Symbol('s');
      case 'getter': return Object.defineProperty({}, 'x', { enumerable: true, get() { throw new Error('a getter threw'); } });
      case 'proxy': return new Proxy({}, { ownKeys() { throw new Error('ownKeys threw'); }, get() { throw new Error('get threw'); } });
      case 'cycle': { const o = {}; o.self = o; return o; }
      case 'date': return new Date(0);
      case 'map': return new Map([[1, 2]]);
      case 'class': return new (class Thing { constructor() { this.x = 1; } })();
      default: return undefined;
    }
    case 'error': {
      const e = d.plain ? {} : new (globalThis[d.kind] ?? Error)(String(build(d.message, inputs)));
      if ('code' in d) e.code = build(d.code, inputs);
      if ('name' in d) e.name = build(d.name, inputs);
      if (d.plain) e.message = build(d.message, inputs);
      return e;
    }
    default: return d;
  }
}
function act(a, inputs, call) {
  switch (a.act) {
    case 'return': return build(a.v, inputs);
    case 'throw': throw build(a.v, inputs);
    case 'reject': return Promise.reject(build(a.v, inputs));
    case 'async': return (async () => { await null; return build(a.v, inputs); })();
    case 'post': for (const m of a.msgs) parentPort.postMessage(build(m, inputs)); return inputs;
    case 'hog': { const keep = []; for (;;) keep.push(a.buffers ? new Float64Array(1e6).fill(1) : new Array(1e5).fill({ v: 1 })); }
    case 'call': return (async () => {
      try {
        const out = await call(build(a.model, inputs), build(a.tensors, inputs));
        return a.then === 'keep' || a.then === 'rethrow' ? out : build(a.then, inputs);
      } catch (e) {
        if (a.then === 'rethrow') throw e;
        return a.then === 'keep' ? inputs : build(a.then, inputs);
      }
    })();
  }
}
const step = (key, t, ctx, call) => (ctx.parameters[key] === undefined ? t : act(JSON.parse(ctx.parameters[key]), t, call));
export function preprocess(t, ctx) { return step('pre', t, ctx); }
export function postprocess(t, ctx) { return step('post', t, ctx); }
export function run(t, call, ctx) { return ctx.parameters.run === undefined ? call('mlp', t) : step('run', t, ctx, call); }
`;

const META = `format_version: '2.0'
kind: meta
meta: {calls: [mlp, fz, ghost]}
client_inputs:
- {name: x, dtype: f32, shape: fn, dims: {f: 784}}
client_outputs:
- {name: logits, dtype: f32, shape: kn, dims: {k: 10}}
`;

export interface HookSurface {
  readonly worker: Worker;
  readonly http: FastifyInstance;
  close(): Promise<void>;
}

/** A Worker serving mlp, fz and fzmeta from a fresh repository, and its HTTP app (for inject). */
export async function startHookSurface(): Promise<HookSurface> {
  const repo = mkdtempSync(join(tmpdir(), 'hloserve-fuzz-hooks-'));
  cpSync(join(examples, 'mlp'), join(repo, 'mlp'), { recursive: true });
  cpSync(join(examples, 'mlp'), join(repo, 'fz'), { recursive: true });
  writeFileSync(join(repo, 'fz', 'model.mjs'), HOOKS);
  mkdirSync(join(repo, 'fzmeta'));
  writeFileSync(join(repo, 'fzmeta', 'manifest.yaml'), META);
  writeFileSync(join(repo, 'fzmeta', 'model.mjs'), HOOKS);
  const settings = workerSettings(defaultConfig(repo));
  const worker = await Worker.start({
    modelRepo: repo,
    settings: {
      ...settings,
      cacheDir: join(repo, '.state'),
      // A short batching window: the good request sent beside each fuzzed one shares its batch.
      scheduler: { ...settings.scheduler, maxQueueDelayUs: 2_000 },
      hooks: { ...settings.hooks, threads: 2, timeoutMs: 5_000, maxHeapMb: 64, maxBufferMb: 128 },
    },
    log: createLogger('silent'),
  });
  const http = buildHttpServer(worker, {});
  await http.ready();
  return {
    worker,
    http,
    async close() {
      await http.close();
      await worker.stop(false);
      rmSync(repo, { recursive: true, force: true });
    },
  };
}

// ---- generators -------------------------------------------------------------------------------

const N = 784;
const dtypes = fc.constantFrom('f32', 'f64', 'i32', 'i64', 'u8', 'bool', 'f16', 'BYTES', 'FP32', '', 'u64');
const names = fc.constantFrom('x', 'logits', 'y', '', '__proto__', 'constructor', 'toString');
const rows = fc.constantFrom(0, 1, 2, 33, -1);
const ctor = fc.constantFrom(
  'Float32Array',
  'Float32Array',
  'Float64Array',
  'Int32Array',
  'Uint8Array',
  'Uint8ClampedArray',
  'BigInt64Array',
  'Uint16Array',
  'DataView',
  'ArrayBuffer',
  'Array',
);
const primitive: fc.Arbitrary<Desc> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -3, max: 40 }),
  fc.double(),
  fc.string({ maxLength: 6 }),
  fc.constantFrom(
    ...(['nan', 'inf', 'ninf', 'negz', 'unsafe', 'huge'] as const).map((v) => ({ $: 'num' as const, v })),
  ),
  fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map((v) => ({ $: 'bigint' as const, v: String(v) })),
  fc.constantFrom(
    ...(['fn', 'sym', 'getter', 'proxy', 'cycle', 'date', 'map', 'class', 'undef'] as const).map((v) => ({
      $: 'odd' as const,
      v,
    })),
  ),
);
const typedArray: fc.Arbitrary<Desc> = fc.record(
  {
    $: fc.constant('ta' as const),
    t: ctor,
    n: fc.oneof(fc.constantFrom(0, 1, 10, 20, N, 2 * N, 33 * N), fc.nat({ max: 3000 })),
    shared: fc.boolean(),
    off: fc.constantFrom(0, 0, 0, 1, 4),
  },
  { requiredKeys: ['$', 't', 'n'] },
);
/** A rows x width shape, its element count right or not. */
const tensorOf = (width: number): fc.Arbitrary<Desc> =>
  fc.oneof(
    // Valid in form, any number of rows: none, the request's, more, past the largest batch.
    fc.record({ r: fc.constantFrom(0, 1, 1, 2, 32, 33), shared: fc.boolean() }).map(({ r, shared }) => ({
      $: 'tensor' as const,
      dtype: 'f32',
      shape: [r, width],
      data: { $: 'ta' as const, t: 'Float32Array', n: r * width, shared },
    })),
    // Near valid: the right dtype and a shape of some rows, its data sized to match or not.
    fc
      .record({
        r: rows,
        ctorName: ctor,
        off: fc.constantFrom(0, 0, 1),
        shared: fc.boolean(),
        extra: fc.integer({ min: -1, max: 1 }),
      })
      .map(({ r, ctorName, off, shared, extra }) => ({
        $: 'tensor' as const,
        dtype: 'f32',
        shape: [r, width],
        data: { $: 'ta' as const, t: ctorName, n: Math.max(0, r) * width + extra + off, shared, off },
      })),
    fc.record({
      $: fc.constant('tensor' as const),
      dtype: fc.oneof(dtypes, primitive),
      shape: fc.oneof(
        fc.array(fc.oneof(fc.integer({ min: -2, max: 40 }), fc.constantFrom(width, 1e9, 2 ** 53), primitive), {
          maxLength: 4,
        }),
        primitive,
      ),
      data: fc.oneof(
        typedArray,
        primitive,
        fc.array(fc.nat({ max: 8 }), { maxLength: 4 }).map((lengths) => ({ $: 'bytes' as const, lengths })),
      ),
    }),
  );
/** A result object: the expected tensor, a wrong one, or anything at all, under any names. */
const resultOf = (name: string, width: number): fc.Arbitrary<Desc> =>
  fc.oneof(
    { weight: 3, arbitrary: tensorOf(width).map((t) => ({ $: 'obj' as const, entries: [[name, t]] as const })) },
    {
      weight: 2,
      arbitrary: fc
        .array(fc.tuple(names, fc.oneof(tensorOf(width), primitive, fc.constant({ $: 'input' as const, name: 'x' }))), {
          maxLength: 3,
        })
        .map((entries) => ({ $: 'obj' as const, entries })),
    },
    { weight: 1, arbitrary: fc.oneof(primitive, typedArray, fc.constant({ $: 'inputs' as const })) },
  );
const codes = fc.oneof(
  fc.constantFrom(...Object.keys(ERROR_CATALOGUE), 'INVALID_ARGUMENT', 'HLO_ERR_NOPE', 'hasOwnProperty', '__proto__'),
  primitive,
);
const thrown: fc.Arbitrary<Desc> = fc.oneof(
  fc.record(
    {
      $: fc.constant('error' as const),
      kind: fc.constantFrom('Error', 'TypeError', 'RangeError', 'AggregateError', 'Nope'),
      message: fc.oneof(fc.string({ maxLength: 20 }), primitive),
      code: codes,
      name: fc.oneof(fc.string({ maxLength: 8 }), primitive),
      plain: fc.boolean(),
    },
    { requiredKeys: ['$', 'kind', 'message'] },
  ),
  primitive,
);
/** Messages shaped like the pool's protocol, or not. */
const posted: fc.Arbitrary<Desc> = fc.oneof(
  primitive,
  fc
    .record({
      type: fc.constantFrom('result', 'error', 'exports', 'started', 'subcall', 'lanes', 'subresult', 'call'),
      // Never a live call's id (the pool's start at 1): a hook forging a well-formed answer to
      // another call is code misbehaving on purpose, which docs/bundle-format.md leaves to trust.
      id: fc.oneof(fc.constantFrom(0, -1, 1e15, 0.5), fc.string({ maxLength: 3 }), fc.constant(null)),
      subId: fc.oneof(fc.integer({ min: 0, max: 4 }), primitive),
      error: fc.oneof(
        primitive,
        fc.constant({
          $: 'obj' as const,
          entries: [
            ['name', 'E'],
            ['message', 'm'],
            ['code', null],
          ] as const,
        }),
      ),
      functions: fc.oneof(primitive, fc.array(fc.string({ maxLength: 4 }), { maxLength: 2 })),
      tensors: resultOf('x', N),
    })
    .map((m) => ({ $: 'obj' as const, entries: Object.entries(m) as [string, Desc][] })),
);
const act = (name: string, width: number): fc.Arbitrary<Act> =>
  fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({ act: fc.constant('post' as const), msgs: fc.array(posted, { maxLength: 4 }) }),
    },
    // Rare: each stops its thread, and a fresh one starts.
    { weight: 1, arbitrary: fc.record({ act: fc.constant('hog' as const), buffers: fc.boolean() }) },
    {
      weight: 20,
      arbitrary: fc.record({ act: fc.constantFrom('return' as const, 'async' as const), v: resultOf(name, width) }),
    },
    { weight: 10, arbitrary: fc.record({ act: fc.constantFrom('throw' as const, 'reject' as const), v: thrown }) },
  );
const metaCall: fc.Arbitrary<Act> = fc.record({
  act: fc.constant('call' as const),
  model: fc.oneof(fc.constantFrom('mlp', 'fz', 'fzmeta', 'ghost', 'nope', ''), primitive),
  tensors: fc.oneof(fc.constant({ $: 'inputs' as const }), resultOf('x', N)),
  then: fc.oneof(fc.constantFrom('keep' as const, 'rethrow' as const), resultOf('logits', 10)),
});

export const hookInput: fc.Arbitrary<HookInput> = fc.oneof(
  fc.record({ model: fc.constant('fz' as const), pre: act('x', N) }),
  fc.record({ model: fc.constant('fz' as const), post: act('logits', 10) }),
  fc.record({ model: fc.constant('fz' as const), pre: act('x', N), post: act('logits', 10) }),
  fc.record({ model: fc.constant('fzmeta' as const), run: fc.oneof(metaCall, act('logits', 10)) }),
  // A meta whose sub-call reaches fz's misbehaving hooks: the parameters go to the sub-call's hooks
  // only through the meta's own request, so this exercises the sub-call's checks instead.
  fc.record({ model: fc.constant('fzmeta' as const), run: metaCall }),
);

// ---- the verdict ------------------------------------------------------------------------------

const body = (parameters: Record<string, string> = {}) =>
  JSON.stringify({
    parameters,
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, N], data: new Array(N).fill(0.25) }],
  });

async function infer(s: HookSurface, model: string, payload: string): Promise<{ statusCode: number; body: string }> {
  return withTimeout(
    s.http.inject({
      method: 'POST',
      url: `/v2/models/${model}/infer`,
      payload,
      headers: { 'content-type': 'application/json' },
    }),
    `HTTP infer on ${model}`,
  );
}

/** Whether the fuzzed hook itself asked for HLO_ERR_INTERNAL (it may, as a sub-call's status). */
const asksInternal = (x: HookInput): boolean => JSON.stringify(x).includes('"HLO_ERR_INTERNAL"');

/**
 * Sends the fuzzed request beside a good one to the same model (they may share a batch, and a
 * thread hand-over); the fuzzed one must answer 200 or a catalogue error that is not INTERNAL
 * (unless its hook threw that code), the good one 200, and then mlp, fz and fzmeta must serve.
 */
export function hookTarget(s: HookSurface): Target<HookInput> {
  return {
    name: 'hooks',
    pure: false,
    arbitrary: hookInput,
    async run(x) {
      const parameters: Record<string, string> = {};
      for (const k of ['pre', 'post', 'run'] as const) if (x[k] !== undefined) parameters[k] = JSON.stringify(x[k]);
      const [bad, good] = await Promise.all([infer(s, x.model, body(parameters)), infer(s, x.model, body())]);
      if (!HTTP_CODES.has(bad.statusCode))
        return `HTTP ${bad.statusCode} is outside the catalogue: ${bad.body.slice(0, 200)}`;
      if (bad.statusCode !== 200) {
        let code: unknown;
        try {
          code = (JSON.parse(bad.body) as { code?: unknown }).code;
        } catch {
          return `HTTP ${bad.statusCode} without a JSON error body: ${bad.body.slice(0, 200)}`;
        }
        if (typeof code !== 'string' || !CODES.has(code)) return `HTTP ${bad.statusCode} with code ${String(code)}`;
        if (code === 'HLO_ERR_INTERNAL' && !asksInternal(x))
          return `answered HLO_ERR_INTERNAL: ${bad.body.slice(0, 300)}`;
      }
      if (good.statusCode !== 200)
        return `the good request beside it failed: ${good.statusCode} ${good.body.slice(0, 300)}`;
      for (const m of ['mlp', 'fz', 'fzmeta']) {
        const r = await infer(s, m, body());
        if (r.statusCode !== 200) return `${m} then failed: ${r.statusCode} ${r.body.slice(0, 300)}`;
      }
      return null;
    },
  };
}
