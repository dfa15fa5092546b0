// bench/thread-wake: what one round trip between the event-loop thread and an idle worker thread
// costs on this machine, by the way it is carried. It is the floor under a hook call (issue 13):
// a hook runs on another thread, so each call needs at least that thread woken and the answer
// seen by the engine's thread.
//
//   node bench/thread-wake.mjs [--n 4000] [--rounds 3]
//
// Ways measured (each a ping from the main thread and a pong from the worker, one at a time,
// the worker idle in between, as a hook thread is at c=1):
//   futex both ways   main Atomics.notify -> worker Atomics.wait wakes -> worker Atomics.notify ->
//                     main blocked in Atomics.wait wakes (two futex wake-ups, no event loop)
//   futex + message   main Atomics.notify -> worker wakes -> worker postMessage -> main's event
//                     loop wakes (what a hook lane does today)
//   message both ways postMessage each way (both event loops wake)
//   futex + spin      worker sleeps in Atomics.wait; main spins on the answer word (one wake-up;
//                     the main thread burns its core while it waits)
import { Worker } from 'node:worker_threads';

const flag = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
};
const n = flag('--n', 4000);
const rounds = flag('--rounds', 3);
// µs the main thread works between pings (the engine's own part of a request), so that the worker
// idles between calls as a hook thread does; 0 is a tight ping-pong.
const gapUs = flag('--gap', 0);
const gap = () => {
  const until = performance.now() + gapUs / 1000;
  while (performance.now() < until);
};

const body = `
const { parentPort, workerData } = require('node:worker_threads');
const w = new Int32Array(workerData.sab);
// w[0]: ping counter, w[1]: pong counter, w[2]: mode
parentPort.on('message', (m) => {
  if (m === 'stop') process.exit(0);
  if (typeof m === 'number') { parentPort.postMessage(m); return; }
  // m = { mode, n }: serve n pings by futex, answering by futex or message
  let seen = Atomics.load(w, 0);
  parentPort.postMessage('ready');
  for (let i = 0; i < m.n; i++) {
    Atomics.wait(w, 0, seen);
    seen = Atomics.load(w, 0);
    Atomics.store(w, 1, seen);
    if (m.mode === 'futex') Atomics.notify(w, 1);
    else if (m.mode === 'message') parentPort.postMessage(seen);
  }
  parentPort.postMessage('done');
});
`;

const sab = new SharedArrayBuffer(16);
const w = new Int32Array(sab);
const worker = new Worker(body, { eval: true, workerData: { sab } });
const next = () => new Promise((r) => worker.once('message', r));

function q(lat) {
  lat.sort((a, b) => a - b);
  const at = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] * 1000;
  return { p50: at(0.5), p90: at(0.9) };
}

async function futexBoth() {
  const ready = next();
  worker.postMessage({ mode: 'futex', n });
  await ready;
  const done = next();
  const lat = [];
  for (let i = 0; i < n; i++) {
    gap();
    const t = performance.now();
    const v = Atomics.add(w, 0, 1) + 1;
    Atomics.notify(w, 0);
    while (Atomics.load(w, 1) !== v) Atomics.wait(w, 1, Atomics.load(w, 1), 50);
    lat.push(performance.now() - t);
  }
  await done;
  return q(lat);
}

async function futexSpin() {
  const ready = next();
  worker.postMessage({ mode: 'spin', n });
  await ready;
  const done = next();
  const lat = [];
  for (let i = 0; i < n; i++) {
    gap();
    const t = performance.now();
    const v = Atomics.add(w, 0, 1) + 1;
    Atomics.notify(w, 0);
    while (Atomics.load(w, 1) !== v);
    lat.push(performance.now() - t);
  }
  await done;
  return q(lat);
}

async function futexMessage() {
  const lat = [];
  let resolve = null;
  const onMsg = (m) => {
    if (typeof m === 'number') resolve?.();
  };
  worker.on('message', onMsg);
  const ready = next();
  worker.postMessage({ mode: 'message', n });
  await ready;
  const done = new Promise((r) => worker.on('message', (m) => m === 'done' && r()));
  for (let i = 0; i < n; i++) {
    gap();
    const t = performance.now();
    const answered = new Promise((r) => (resolve = r));
    Atomics.add(w, 0, 1);
    Atomics.notify(w, 0);
    await answered;
    lat.push(performance.now() - t);
  }
  await done;
  worker.off('message', onMsg);
  worker.removeAllListeners('message');
  return q(lat);
}

async function messageBoth() {
  const lat = [];
  for (let i = 0; i < n; i++) {
    gap();
    const t = performance.now();
    const answered = next();
    worker.postMessage(i);
    await answered;
    lat.push(performance.now() - t);
  }
  return q(lat);
}

const ways = {
  'futex both ways': futexBoth,
  'futex + message': futexMessage,
  'message both ways': messageBoth,
  'futex + spin (main spins)': futexSpin,
};
const res = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
for (let r = 0; r < rounds; r++) for (const [k, f] of Object.entries(ways)) res[k].push(await f());
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `round trip main <-> idle worker, ${n} pings x ${rounds} rounds, ${gapUs} µs of main-thread work between pings (median of rounds)`,
);
for (const [k, v] of Object.entries(res))
  console.log(
    `  ${k.padEnd(28)} p50 ${med(v.map((x) => x.p50)).toFixed(1)} µs  p90 ${med(v.map((x) => x.p90)).toFixed(1)} µs`,
  );
worker.postMessage('stop');
