// bench/console-metrics-memory: what the console holds, and what the feed sends it, for the
// `metrics` topic over a large repository. The console's own reducers (console/src/api/reducers.ts
// of each checkout, bundled with esbuild) fold five minutes of 1 Hz ticks shaped as that checkout's
// engine sends them: every model's sample in each tick (before), or only the samples that changed
// with the tick's totals (after). --changed lists how many models' samples change per second (the
// rest idle). Prints the heap the folded state retains, a tick's parse and fold times, the time the
// overview takes to compute its chart points from the state (at each tick), and a tick's bytes on
// the wire.
// Usage: node --expose-gc bench/console-metrics-memory.mjs [--models 1000] [--changed 0,100,1000]
//          [--seconds 300] [--base /path/to/other/checkout]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { arg, fmt, machine, median } from './stats.mjs';

if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
const here = resolve(fileURLToPath(new URL('..', import.meta.url)));
const N = Number(arg('models', '1000'));
const changedList = arg('changed', '0,100,1000').split(',').map(Number);
const seconds = Number(arg('seconds', '300'));
const base = arg('base', null);
const builds = [{ name: 'this', root: here }, ...(base ? [{ name: 'base', root: resolve(base) }] : [])];
const tmp = mkdtempSync(join(tmpdir(), 'console-metrics-'));

/** The checkout's reducers and the overview's `summarise` (what the overview computes per tick). */
async function consoleOf(b) {
  const load = async (entry, name) => {
    const out = join(tmp, `${b.name}-${name}.mjs`);
    await build({
      entryPoints: [join(b.root, entry)],
      bundle: true,
      format: 'esm',
      platform: 'node',
      jsx: 'automatic',
      loader: { '.css': 'empty' },
      outfile: out,
      logLevel: 'error',
    });
    return import(pathToFileURL(out).href);
  };
  const reducers = await load('console/src/api/reducers.ts', 'reducers');
  const { summarise } = await load('console/src/views/Overview.tsx', 'overview');
  return { ...reducers, summarise };
}

const names = Array.from({ length: N }, (_, i) => `m${String(i).padStart(3, '0')}`);
let seed = 1;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const sample = (busy) => ({
  requestsPerSecond: busy ? 10 + rnd() * 50 : 0,
  p50Ms: busy ? 0.3 + rnd() : null,
  p99Ms: busy ? 1 + rnd() * 5 : null,
  queueDepth: busy ? Math.floor(rnd() * 3) : 0,
  residentBytes: 524288,
  loads: 1,
  evictions: 0,
});

/** The feed's messages for `seconds` ticks, as the engine of that shape sends them. */
function messages(shape, changed) {
  const t0 = 1_700_000_000_000;
  const out = [];
  const all = (busy) => Object.fromEntries(names.map((n, i) => [n, sample(busy && i < changed)]));
  const totals = { requestsPerSecond: 0, p50Ms: null, p99Ms: null, loads: N, evictions: 0 };
  if (shape === 'ticks') {
    out.push({ topic: 'metrics', seq: 1, kind: 'snapshot', data: { items: [{ at: t0, models: all(false) }] } });
    for (let s = 1; s <= seconds; s++) {
      const at = t0 + s * 1000;
      const models = all(true);
      for (const n in models) models[n] = { at, ...models[n] };
      out.push({ topic: 'metrics', seq: s + 1, kind: 'delta', data: { at, models } });
    }
  } else {
    out.push({ topic: 'metrics', seq: 1, kind: 'snapshot', data: { at: t0, totals, items: all(false), recent: [] } });
    for (let s = 1; s <= seconds; s++) {
      const upsert = Object.fromEntries(names.slice(0, changed).map((n) => [n, sample(true)]));
      out.push({
        topic: 'metrics',
        seq: s + 1,
        kind: 'delta',
        data: { at: t0 + s * 1000, totals, upsert, remove: [] },
      });
    }
  }
  // As the socket delivers them: text, parsed by the client.
  return out.map((m) => JSON.stringify(m));
}

function measure(mod, changed) {
  const shape = mod.foldMetrics ? 'metrics' : 'ticks';
  const fold = mod.foldMetrics ?? mod.foldTicks;
  globalThis.gc();
  globalThis.gc();
  const heap0 = process.memoryUsage().heapUsed;
  const texts = messages(shape, changed);
  const wire = median(texts.slice(1).map((t) => t.length));
  let state;
  const times = [];
  const parses = [];
  for (const text of texts) {
    const t = performance.now();
    const msg = JSON.parse(text);
    const t1 = performance.now();
    state = fold(state, msg);
    times.push(performance.now() - t1);
    parses.push(t1 - t);
  }
  texts.length = 0;
  globalThis.gc();
  globalThis.gc();
  const retained = process.memoryUsage().heapUsed - heap0;
  if (!state) throw new Error('nothing folded');
  // The overview's chart points, computed again at each tick from what the state holds.
  const points = [];
  for (let i = 0; i < 20; i++) {
    const t = performance.now();
    mod.summarise(state.totals ?? state);
    points.push(performance.now() - t);
  }
  return { retained, foldMs: median(times.slice(1)), parseMs: median(parses.slice(1)), wire, pointsMs: median(points) };
}

console.log(`# console-metrics-memory: ${N} models, ${seconds} ticks; ${machine()}`);
for (const b of builds) {
  const mod = await consoleOf(b);
  for (const changed of changedList) {
    const r = measure(mod, changed);
    console.log(
      `${b.name} (${mod.foldMetrics ? 'changed samples + totals' : 'every sample per tick'}), ${changed} of ${N} changing each second: ` +
        `state retained ${fmt(r.retained / 2 ** 20, 1)} MiB; per tick: JSON.parse ${fmt(r.parseMs, 2)} ms, fold ${fmt(r.foldMs, 2)} ms, the overview's points ${fmt(r.pointsMs, 2)} ms, ${fmt(r.wire / 1024, 1)} KiB`,
    );
  }
}
rmSync(tmp, { recursive: true, force: true });
