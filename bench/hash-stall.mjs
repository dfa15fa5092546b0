// bench/hash-stall: the longest event-loop gap while the compile cache hashes a large module or
// executable (engine/src/device/chunked-hash.ts, a 4 MiB slice per turn) against one sha256 over
// the whole of it (as the cache did before session 20). --mb sets the size (default 100).
// Usage: npm run build && node bench/hash-stall.mjs [--mb 100] [--rounds 3]
import { createHash } from 'node:crypto';
import { clearInterval, setInterval } from 'node:timers';
import { sha256InSlices } from '../engine/dist/src/device/chunked-hash.js';
import { arg, machine } from './stats.mjs';

const mb = Number(arg('mb', '100'));
const rounds = Number(arg('rounds', '3'));
const data = new Uint8Array(mb * 2 ** 20).map((_, i) => i & 0xff);

async function gap(fn) {
  let max = 0;
  let last = performance.now();
  const iv = setInterval(() => {
    const n = performance.now();
    max = Math.max(max, n - last);
    last = n;
  }, 1);
  await new Promise((r) => setTimeout(r, 20));
  max = 0;
  last = performance.now();
  const t = performance.now();
  await fn();
  const total = performance.now() - t;
  await new Promise((r) => setTimeout(r, 5));
  clearInterval(iv);
  return { total, max };
}

console.log(`# bench/hash-stall, machine: ${machine()}; ${mb} MiB`);
console.log('round kind       total_ms  longest_loop_gap_ms');
for (let r = 1; r <= rounds; r++) {
  for (const [kind, fn] of [
    ['whole', async () => createHash('sha256').update(data).digest()],
    ['in-slices', () => sha256InSlices(data)],
  ]) {
    const { total, max } = await gap(fn);
    console.log(
      `${String(r).padStart(5)} ${kind.padEnd(10)} ${total.toFixed(0).padStart(8)}  ${max.toFixed(1).padStart(19)}`,
    );
  }
}
