// bench/warm-start-ab: two builds of the bundled CLI, or one under two sets of node flags, started
// warm (code cache and compiled executables left by an earlier start) on examples/models, in
// alternating pairs (the order swapped each pair), so that the machine's drift falls on both
// alike. Per start: seconds from spawn to "listening" and the CPU seconds its main (JS) thread had
// used by then (Linux /proc). Prints each side's median and the median of the paired differences
// (B - A) with a bootstrap 95% interval.
//
// An arm is DIR[:FLAG,FLAG...]: DIR a bundle directory under engine/dist (bundle is what `npm run
// build` writes; a copy of another build's engine/dist/bundle beside it runs that build, since
// the bundle finds its other files relative to itself), FLAGS the node flags (default: the serving
// flags of this checkout, engine/src/node-flags.ts). Each arm starts once before the pairs, to
// leave its code cache.
//
//   npm run build && cp -r <older checkout>/engine/dist/bundle engine/dist/bundle-before
//   node bench/warm-start-ab.mjs bundle-before bundle [--pairs 30]
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { SERVER_NODE_FLAGS } from '../engine/dist/src/node-flags.js';
import { startServer } from '../e2e/dist/src/server-process.js';
import { processCpuSeconds } from './proc-cpu.mjs';
import { arg, bootstrap, machine, median } from './stats.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pairs = Number(arg('pairs', '30'));
const arms = process.argv
  .slice(2)
  .filter((a, i, all) => !a.startsWith('--') && all[i - 1] !== '--pairs')
  .map((a) => {
    const [dir, flags] = a.split(':');
    return { name: a, dir, flags: flags === undefined ? [...SERVER_NODE_FLAGS] : flags.split(',') };
  });
if (arms.length !== 2) throw new Error('usage: node bench/warm-start-ab.mjs DIR[:FLAGS] DIR[:FLAGS] [--pairs 30]');

async function start(arm) {
  const t0 = performance.now();
  const server = await startServer(
    { HLOSERVE_LOGGING_LEVEL: 'info' },
    120_000,
    [],
    join(root, 'engine', 'dist', arm.dir, 'cli.js'),
    arm.flags,
  );
  const seen = { s: (performance.now() - t0) / 1000, cpu: processCpuSeconds(server.child.pid).mainCpuS };
  await server.stop();
  return seen;
}

console.log(`# bench/warm-start-ab, machine: ${machine()}`);
console.log(
  `# A = ${arms[0].name} (${arms[0].flags.join(' ')}), B = ${arms[1].name} (${arms[1].flags.join(' ')}), ${pairs} pairs`,
);
for (const arm of arms) await start(arm);
const seen = [[], []];
for (let i = 0; i < pairs; i++) {
  const order = i % 2 === 0 ? [0, 1] : [1, 0];
  for (const k of order) seen[k].push(await start(arms[k]));
}
for (const [key, label] of [
  ['s', 'listening s'],
  ['cpu', 'main-thread CPU s'],
]) {
  const d = seen[0].map((a, i) => seen[1][i][key] - a[key]);
  const [lo, hi] = bootstrap(d, median);
  const [a, b] = seen.map((side) => median(side.map((x) => x[key])));
  const ms = (x) => (1000 * x).toFixed(1);
  console.log(
    `${label.padEnd(18)} A ${a.toFixed(3)}  B ${b.toFixed(3)}  B/A ${(b / a).toFixed(3)}  ` +
      `B-A paired median ${ms(median(d))} ms (95% CI ${ms(lo)} .. ${ms(hi)})`,
  );
}
