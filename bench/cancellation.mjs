// bench/cancellation: what the transports pay per call for a cancellation signal the scheduler
// can listen to: an AbortController (an EventTarget on Node 20) against engine's Cancellation.
// Each call creates one, adds the scheduler's abort listener and removes it again (the answered
// case, by far the common one).
// Usage: npm run build && node bench/cancellation.mjs
import { Cancellation } from '../common/dist/src/cancellation.js';
import { machine } from './stats.mjs';

const N = 1_000_000;
const onAbort = () => {};
console.log(`# bench/cancellation, machine: ${machine()}, ${N} calls per figure`);
console.log('| round | AbortController µs per call | Cancellation µs per call |');
console.log('|---|---|---|');
for (let round = 1; round <= 3; round++) {
  let t = performance.now();
  for (let i = 0; i < N; i++) {
    const s = new AbortController().signal;
    s.addEventListener('abort', onAbort, { once: true });
    s.removeEventListener('abort', onAbort);
  }
  const abortController = ((performance.now() - t) / N) * 1e3;
  t = performance.now();
  for (let i = 0; i < N; i++) {
    const c = new Cancellation();
    c.addEventListener('abort', onAbort, { once: true });
    c.removeEventListener('abort', onAbort);
  }
  const cancellation = ((performance.now() - t) / N) * 1e3;
  console.log(`| ${round} | ${abortController.toFixed(2)} | ${cancellation.toFixed(3)} |`);
}
