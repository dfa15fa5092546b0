// bench/large-json: small gRPC ModelInfer latency (mlp, 1 row) without and while a large JSON body
// is received and decoded by the same server (the issue's "other requests' p99 within 2x").
//
// Each round is a fresh process holding the server (engine/test/transports/surface.js: a real Worker,
// its gRPC server and its HTTP server on loopback) and two gRPC clients sending 1-row requests back
// to back: `--baseline` seconds alone, then while the large body is sent and decoded (it is
// refused with 400 after decoding: more rows than mlp serves), then `--baseline` seconds alone
// again. The p99 ratio is the p99 during the body over the p99 of the two windows alone, pooled.
// The large body comes from another process (`--sender process`, the default: a client elsewhere,
// as in any deployment) or from the server's own process (`--sender inline`: its 200 MB write
// then shares the server's event loop, which is how this bench measured before).
// `--against DIST` alternates rounds with another build's engine/dist (e.g. a copy of main's).
//
// Usage: npm run build && nice -n 10 node bench/large-json.mjs [--mb 200] [--rounds 4]
//          [--concurrency 2] [--baseline 5] [--sender process|inline] [--against DIST]
import { fork } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const self = fileURLToPath(import.meta.url);
const here = resolve(self, '..', '..', 'engine', 'dist');
const { values } = parseArgs({
  options: {
    mb: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '2' },
    baseline: { type: 'string', default: '5' },
    sender: { type: 'string', default: 'process' },
    against: { type: 'string' },
    round: { type: 'string' },
    send: { type: 'string' },
  },
});
const bodyBytes = Number(values.mb) * 1e6;

if (values.send !== undefined) {
  // The sender: builds the body before the round starts measuring, posts it on 'go'.
  const { largeJsonBody, postInfer } = await import(`${here}/test/transports/large-json.js`);
  const { body } = largeJsonBody(bodyBytes);
  process.send({ ready: body.byteLength });
  process.once('message', async () => {
    const r = await postInfer(Number(values.send), body);
    process.send({ status: r.status, text: r.text.slice(0, 200) });
    process.disconnect();
  });
} else if (values.round !== undefined) {
  await round(values.round);
} else {
  await orchestrate();
}

async function round(dist) {
  // Builds before session 13 kept the transports' tests in test/kserve.
  const dir = existsSync(`${dist}/test/transports`) ? 'transports' : 'kserve';
  const { largeJsonBody, postInfer, smallRequests } = await import(`${dist}/test/${dir}/large-json.js`);
  const { startSurface } = await import(`${dist}/test/${dir}/surface.js`);
  const s = await startSurface({ maxJsonBytes: 256 * 2 ** 20 }, { maxRecvMsgBytes: 256 * 2 ** 20 });
  await s.http.listen({ host: '127.0.0.1', port: 0 });
  const port = s.http.server.address().port;
  let send;
  if (values.sender === 'process') {
    // Its own session, so on Linux its own scheduling autogroup: the client's 200 MB of writes
    // compete with the machine, not inside the server's share of it.
    const child = fork(self, ['--send', String(port), '--mb', values.mb], { stdio: 'inherit', detached: true });
    const messages = [];
    let wake = null;
    child.on('message', (m) => (messages.push(m), wake?.()));
    const next = async () => {
      while (messages.length === 0) await new Promise((r) => (wake = r));
      return messages.shift();
    };
    await next();
    send = () => (child.send('go'), next());
  } else {
    const { body } = largeJsonBody(bodyBytes);
    send = () => postInfer(port, body);
  }
  const gcs = [];
  new PerformanceObserver((l) => gcs.push(...l.getEntries().map((e) => [e.startTime, e.duration]))).observe({
    entryTypes: ['gc'],
  });
  const delay = monitorEventLoopDelay({ resolution: 10 });
  const concurrency = Number(values.concurrency);
  const alone = async () => {
    const until = performance.now() + Number(values.baseline) * 1000;
    return smallRequests(s, concurrency, () => performance.now() > until);
  };
  // The event loop's thread: CPU time and time spent runnable but waiting for a core (ns).
  const sched = () => readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ').map(Number);
  const s0 = sched();
  const before = await alone();
  const s1 = sched();
  delay.enable();
  let done = false;
  const t0 = performance.now();
  const bigP = send().finally(() => (done = true));
  const during = await smallRequests(s, concurrency, () => done);
  const big = await bigP;
  const bigMs = performance.now() - t0;
  delay.disable();
  const s2 = sched();
  const after = await alone();
  const s3 = sched();
  const nAlone = before.latenciesMs.length + after.latenciesMs.length;
  const perRequest = (i, alone) =>
    alone
      ? (s1[i] - s0[i] + s3[i] - s2[i]) / 1e3 / nAlone
      : (s2[i] - s1[i]) / 1e3 / Math.max(1, during.latenciesMs.length);
  const gcDuring = gcs.filter(([t]) => t >= t0 && t <= t0 + bigMs).map(([, d]) => d);
  const gcAloneMs = gcs.filter(([t]) => t < t0 || t > t0 + bigMs).reduce((a, [, d]) => a + d, 0);
  await s.close();
  process.send({
    big: { status: big.status, text: big.text.slice(0, 200), ms: bigMs },
    before: before.latenciesMs,
    during: during.latenciesMs,
    after: after.latenciesMs,
    failures: before.failures.length + during.failures.length + after.failures.length,
    gcMs: gcDuring.reduce((a, b) => a + b, 0),
    gcUs: [
      (gcAloneMs * 1e3) / nAlone,
      (gcDuring.reduce((a, b) => a + b, 0) * 1e3) / Math.max(1, during.latenciesMs.length),
    ],
    gcMaxMs: Math.max(0, ...gcDuring),
    loopDelayMaxMs: delay.max / 1e6,
    cpuUs: [perRequest(0, true), perRequest(0, false)],
    waitUs: [perRequest(1, true), perRequest(1, false)],
  });
}

function runRound(dist) {
  return new Promise((res, rej) => {
    const child = fork(self, ['--round', dist, ...process.argv.slice(2)], { stdio: 'inherit' });
    let result = null;
    child.on('message', (m) => (result = m));
    child.on('exit', (code) => (result ? res(result) : rej(new Error(`round exited with ${code}`))));
  });
}

async function orchestrate() {
  const { machine } = await import('./stats.mjs');
  const { percentile } = await import(`${here}/test/transports/large-json.js`);
  const builds = [['this', here]];
  if (values.against) builds.push(['against', resolve(values.against)]);
  console.log(
    `# bench/large-json, machine: ${machine()}, body ${values.mb} MB JSON from ${values.sender === 'process' ? 'another process' : "the server's process"}, ` +
      `concurrency ${values.concurrency}, ${values.baseline} s alone before and after${values.against ? `, against ${values.against}` : ''}`,
  );
  console.log(
    '| build | round | big answer | big ms | n alone | p50 alone ms | p99 alone ms | n during | p50 during ms | p99 during ms | p99 ratio | main-thread GC ms during (max) | GC µs/req alone, during | event-loop delay max ms | main-thread CPU µs/req alone, during | run-queue wait µs/req alone, during | failures |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  const ratios = new Map(builds.map(([name]) => [name, []]));
  const f = (x) => x.toFixed(2);
  for (let r = 1; r <= Number(values.rounds); r++) {
    const order = r % 2 === 1 ? builds : [...builds].reverse();
    for (const [name, dist] of order) {
      const x = await runRound(dist);
      const alone = [...x.before, ...x.after];
      const ratio = percentile(x.during, 99) / percentile(alone, 99);
      ratios.get(name).push(ratio);
      console.log(
        `| ${name} | ${r} | ${x.big.status} | ${x.big.ms.toFixed(0)} | ${alone.length} | ${f(percentile(alone, 50))} | ${f(percentile(alone, 99))} | ` +
          `${x.during.length} | ${f(percentile(x.during, 50))} | ${f(percentile(x.during, 99))} | ${f(ratio)} | ` +
          `${x.gcMs.toFixed(0)} (${x.gcMaxMs.toFixed(0)}) | ${x.gcUs.map((v) => v.toFixed(0)).join(', ')} | ${x.loopDelayMaxMs.toFixed(0)} | ` +
          `${x.cpuUs.map((v) => v.toFixed(0)).join(', ')} | ${x.waitUs.map((v) => v.toFixed(0)).join(', ')} | ${x.failures} |`,
      );
      if (x.big.status !== 400) console.log(`#   unexpected answer to the large body: ${x.big.text}`);
    }
  }
  for (const [name, rs] of ratios) {
    const within = rs.filter((x) => x <= 2).length;
    console.log(
      `# ${name}: p99 ratio per round ${rs.map(f).join(' ')}; within 2x in ${within} of ${rs.length}; median ${f(percentile(rs, 50))}`,
    );
  }
}
