// bench/alloc: JS heap allocated per request at one caller (issue 18: each scavenge delays a
// single caller's request by most of 0.4 ms, so the lever is the bytes a request allocates). Starts
// `hloserve serve` from each checkout given (pinned to cpu 0, perf_analyzer on cpu 1, as
// bench/peers), warms it, then samples every allocation with V8's sampling heap profiler (objects
// already collected included) through the inspector while perf_analyzer runs at concurrency 1, and
// prints bytes per request and the top allocation sites (self size, then the same by stack).
//
//   npm run build && node bench/alloc.mjs [CHECKOUT ...] [--seconds 3] [--interval 128] [--top 30]
import { resolve } from 'node:path';
import WebSocket from 'ws';
import { flag, perf, port, removeTmp, startHloserve } from './peers/pinned.mjs';

const valued = new Set(['--seconds', '--interval', '--top', '--server-cpu', '--generator-cpu']);
const checkouts = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !valued.has(all[i - 1]));
const seconds = Number(flag('--seconds', '3'));
const interval = Number(flag('--interval', '128'));
const top = Number(flag('--top', '30'));

const sumSelf = (node) => node.selfSize + node.children.reduce((a, c) => a + sumSelf(c), 0);

async function profile(checkout) {
  const inspect = port();
  const { url, http, proc } = await startHloserve(checkout, 'mlp', { nodeFlags: [`--inspect=127.0.0.1:${inspect}`] });
  try {
    const stats = async () => {
      for (;;) {
        try {
          const r = await globalThis.fetch(`http://127.0.0.1:${http}/v2/models/mlp/stats`);
          if (r.ok) return (await r.json()).model_stats[0];
        } catch {
          /* not up yet */
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    await perf(url, 1, 1500); // warm: compile, first scavenges
    const list = await (await globalThis.fetch(`http://127.0.0.1:${inspect}/json/list`)).json();
    const ws = new WebSocket(list[0].webSocketDebuggerUrl);
    await new Promise((r) => ws.once('open', r));
    let id = 0;
    const pending = new Map();
    ws.on('message', (m) => {
      const x = JSON.parse(m);
      if (x.id && pending.has(x.id)) {
        pending.get(x.id)(x);
        pending.delete(x.id);
      }
    });
    const send = (method, params = {}) =>
      new Promise((r) => {
        const i = ++id;
        pending.set(i, r);
        ws.send(JSON.stringify({ id: i, method, params }));
      });
    await send('HeapProfiler.enable');
    // The idle server's own allocation (console feed, metric history timers) over the same time,
    // so that what is left per request does not depend on how many requests the load got through.
    const sampling = {
      samplingInterval: interval,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    };
    await send('HeapProfiler.startSampling', sampling);
    const idleStart = performance.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const idleProf = (await send('HeapProfiler.stopSampling')).result.profile;
    const idleRate = sumSelf(idleProf.head) / (performance.now() - idleStart);
    const before = await stats();
    const loadStart = performance.now();
    await send('HeapProfiler.startSampling', sampling);
    await perf(url, 1, Math.round((seconds * 1000) / 3));
    const prof = (await send('HeapProfiler.stopSampling')).result.profile;
    const after = await stats();
    const idle = idleRate * (performance.now() - loadStart);
    ws.close();
    const n = Number(after.inference_count) - Number(before.inference_count);
    const self = new Map();
    const stacks = new Map();
    let total = 0;
    const walk = (node, path) => {
      const f = node.callFrame;
      const name = `${f.functionName || '(anon)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
      const p = [name, ...path];
      if (node.selfSize) {
        self.set(name, (self.get(name) ?? 0) + node.selfSize);
        const k = p.slice(0, 4).join(' < ');
        stacks.set(k, (stacks.get(k) ?? 0) + node.selfSize);
        total += node.selfSize;
      }
      for (const c of node.children) walk(c, p);
    };
    walk(prof.head, []);
    return { n, total, idle, self, stacks };
  } finally {
    await proc.stop();
  }
}

try {
  for (const c of checkouts.length > 0 ? checkouts : ['.']) {
    const { n, total, idle, self, stacks } = await profile(resolve(c));
    console.log(
      `\n== ${c}: ${n} requests, ${(total / n).toFixed(0)} B/request sampled (interval ${interval} B), ` +
        `${((total - idle) / n).toFixed(0)} B/request less the idle server's own allocation over the same time`,
    );
    for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top))
      console.log((v / n).toFixed(0).padStart(7), 'B/req', k);
    console.log('-- by stack (4 frames)');
    for (const [k, v] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, top))
      console.log((v / n).toFixed(0).padStart(7), 'B/req', k);
  }
} finally {
  removeTmp();
}
