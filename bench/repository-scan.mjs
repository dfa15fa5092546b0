// bench/repository-scan: what one look at a model repository (dynamic mode's poll, every
// model_poll_seconds, and the looks after file events) costs the serving thread. Over a catalog of
// --models bundles (e2e/src/catalog.ts), alternating --rounds times: the serving thread reading
// every bundle's signature itself with promises (the watcher before it had a thread: a stat of the
// manifest, then bundleSignature), and the RepositoryScanner's thread reading them. Prints the
// main thread's CPU (Linux /proc) and the wall time per look.
// Usage: npm run build && node bench/repository-scan.mjs [--models 1000] [--rounds 6] [--dir DIR]
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeCatalog } from '../e2e/dist/src/catalog.js';
import { bundleSignature } from '../engine/dist/src/registry/bundle-signature.js';
import { RepositoryScanner } from '../engine/dist/src/registry/repository-scan.js';
import { arg, fmt, machine, median } from './stats.mjs';

const N = Number(arg('models', '1000'));
const rounds = Number(arg('rounds', '6'));
const work = arg('dir', join(tmpdir(), `hloserve-catalog-idle-${N}`));
const repo = join(work, 'repo');
if (!existsSync(join(repo, `m${String(N - 1).padStart(2, '0')}`))) {
  rmSync(work, { recursive: true, force: true });
  writeCatalog(repo, N);
}

/** CPU ms of this process's main thread. */
function mainCpuMs() {
  const text = readFileSync(`/proc/${process.pid}/task/${process.pid}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

async function onThisThread() {
  const out = new Map();
  const names = readdirSync(repo, { withFileTypes: true }).filter((e) => e.isDirectory() && !e.name.startsWith('.'));
  for (const { name } of names) {
    const dir = join(repo, name);
    const ok = await stat(join(dir, 'manifest.yaml')).then(
      () => true,
      () => false,
    );
    if (!ok) continue;
    const sig = await bundleSignature(dir);
    if (sig !== null) out.set(name, sig);
  }
  return out;
}

const scanner = new RepositoryScanner();
const ways = [
  ['serving thread, promises', onThisThread],
  ['scan thread', () => scanner.observe(repo, [])],
];
const got = new Map(ways.map(([name]) => [name, { cpu: [], wall: [] }]));
for (let r = 0; r < rounds + 1; r++) {
  for (const [name, look] of r % 2 ? ways : [...ways].reverse()) {
    const c0 = mainCpuMs();
    const t0 = performance.now();
    const seen = await look();
    const wall = performance.now() - t0;
    const cpu = mainCpuMs() - c0;
    if (seen.size !== N) throw new Error(`${name}: ${seen.size} bundles, not ${N}`);
    // The first round starts the thread and warms the caches: not counted.
    if (r === 0) continue;
    got.get(name).cpu.push(cpu);
    got.get(name).wall.push(wall);
  }
}
await scanner.close();
console.log(`# repository-scan: ${N} bundles, ${rounds} looks each way, alternating; ${machine()}`);
for (const [name, { cpu, wall }] of got)
  console.log(
    `${name}: main thread ${fmt(median(cpu), 0)} ms per look (${cpu.join(', ')}), wall ${fmt(median(wall), 0)} ms`,
  );
