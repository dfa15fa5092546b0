// bench/shm-write: writing an output into a registered system shared-memory region
// (SharedMemoryRegistry.write, what an inference with a shared-memory output does after the
// execution), per output size, for one or more checkouts side by side. Each round runs every
// checkout in a child process of its own (rounds alternate); the table gives medians of per-round
// p50s, in µs per write, awaited one after another (a single caller).
//
//   npm run build && node bench/shm-write.mjs [CHECKOUT ...] [--rounds 3] [--writes 3000]
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { machine } from './stats.mjs';

const SIZES = [40, 4096, 65536, 262144, 1048576];
const flag = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};

if (process.argv[2] === '--child') {
  const checkout = process.argv[3];
  const writes = Number(process.argv[4]);
  const { SharedMemoryRegistry } = await import(join(checkout, 'engine', 'dist', 'src', 'kserve', 'shared-memory.js'));
  const key = `/hlo-shm-write-${process.pid}`;
  const path = join('/dev/shm', key.slice(1));
  const bytes = SIZES.at(-1);
  writeFileSync(path, Buffer.alloc(bytes));
  const reg = new SharedMemoryRegistry();
  reg.register('out', key, 0, bytes);
  const out = {};
  try {
    for (const size of SIZES) {
      const data = new Uint8Array(size).fill(1);
      const n = Math.max(200, Math.round(writes / Math.max(1, size / 65536)));
      for (let i = 0; i < 100; i++) await reg.write('out', 0, size, data);
      const us = [];
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await reg.write('out', 0, size, data);
        us.push((performance.now() - t) * 1e3);
      }
      us.sort((a, b) => a - b);
      out[size] = us[Math.floor(n / 2)];
    }
  } finally {
    reg.close();
    rmSync(path, { force: true });
  }
  console.log(JSON.stringify(out));
  process.exit(0);
}

const valued = new Set(['--rounds', '--writes']);
const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !valued.has(all[i - 1]));
const here = fileURLToPath(new URL('.', import.meta.url));
const checkouts = (positional.length > 0 ? positional : [join(here, '..')]).map((r) => resolve(r));
const rounds = Number(flag('--rounds', '3'));
const writes = Number(flag('--writes', '3000'));
console.log(`# bench/shm-write, machine: ${machine()}; ${rounds} round(s)`);
const results = new Map(checkouts.map((c) => [c, []]));
for (let k = 0; k < rounds; k++) {
  for (let j = 0; j < checkouts.length; j++) {
    const c = checkouts[(j + k) % checkouts.length];
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', c, String(writes)], {
      encoding: 'utf8',
      cwd: c,
    });
    if (r.status !== 0) throw new Error(`child for ${c} failed:\n${r.stdout}${r.stderr}`);
    results.get(c).push(JSON.parse(r.stdout.trim().split('\n').pop()));
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
console.log(`\n| checkout | ${SIZES.map((s) => `${s} B p50 µs`).join(' | ')} |`);
console.log(`|---|${SIZES.map(() => '---').join('|')}|`);
for (const c of checkouts) {
  const rs = results.get(c);
  console.log(`| ${c} | ${SIZES.map((s) => med(rs.map((r) => r[s])).toFixed(1)).join(' | ')} |`);
}
