// bench/hash-stall: the longest event-loop gap while the compile cache hashes a large module or
// executable (engine/src/device/chunked-hash.ts, a 4 MiB slice per turn) against one sha256 over
// the whole of it (as the cache did before session 20). --mb sets the size (default 100).
// Usage: npm run build && node bench/hash-stall.mjs [--mb 100] [--rounds 3]
import { createHash } from 'node:crypto';
import { sha256InSlices } from '../engine/dist/src/device/chunked-hash.js';
import { arg, loopGap, machine } from './stats.mjs';

const mb = Number(arg('mb', '100'));
const rounds = Number(arg('rounds', '3'));
const data = new Uint8Array(mb * 2 ** 20).map((_, i) => i & 0xff);

console.log(`# bench/hash-stall, machine: ${machine()}; ${mb} MiB`);
console.log('round kind       total_ms  longest_loop_gap_ms');
for (let r = 1; r <= rounds; r++) {
  for (const [kind, fn] of [
    ['whole', async () => createHash('sha256').update(data).digest()],
    ['in-slices', () => sha256InSlices(data)],
  ]) {
    const { total, maxGap } = await loopGap(fn);
    console.log(
      `${String(r).padStart(5)} ${kind.padEnd(10)} ${total.toFixed(0).padStart(8)}  ${maxGap.toFixed(1).padStart(19)}`,
    );
  }
}
