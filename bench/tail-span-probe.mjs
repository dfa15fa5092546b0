// Preloaded into a server by bench/tail.mjs --span (node --import): splits each single-caller
// request's time at the server's socket. "server span": from the read that brings a request's
// bytes (the socket's push) to the write of its answer (the one write over 100 bytes: a unary
// answer's HEADERS, DATA and trailers in one); "outside": from that write to the next request's
// read (the kernel both ways, the client, and what the server does after answering). Only
// meaningful at concurrency 1 on one connection. It also records, for the slowest 1 % of each
// side, what overlapped them on the event loop: a garbage collection (perf_hooks 'gc' entries) or
// an interval timer's callback (the console's feed sampling, the metric history), and how the
// outside part divides into the server's own work after the answer (until a setImmediate queued at
// the write runs: the loop is done with that request) and the wait for the next request's bytes.
// SIGUSR2 starts a window (clears what was recorded); a second SIGUSR2 writes the window to
// HLOSERVE_TAIL_SPAN_OUT as JSON and stops recording. A diagnostic: it patches net.Socket's push
// and write and wraps setInterval callbacks in this process, nothing else.
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { PerformanceObserver } from 'node:perf_hooks';
import { setImmediate } from 'node:timers';

const out = process.env.HLOSERVE_TAIL_SPAN_OUT;
let on = false;
/** [read, write, idle] per request, performance.now() ms (idle: see the header). */
let requests = [];
let gcs = [];
let intervals = [];
const readAt = new WeakMap();

new PerformanceObserver((list) => {
  if (on) for (const e of list.getEntries()) gcs.push([e.startTime, e.startTime + e.duration]);
}).observe({ entryTypes: ['gc'] });

const setIntervalOrig = globalThis.setInterval;
globalThis.setInterval = function (fn, ...rest) {
  if (typeof fn !== 'function') return setIntervalOrig.call(this, fn, ...rest);
  return setIntervalOrig.call(
    this,
    function (...args) {
      const t0 = performance.now();
      try {
        return fn.apply(this, args);
      } finally {
        if (on) intervals.push([t0, performance.now()]);
      }
    },
    ...rest,
  );
};

const push = net.Socket.prototype.push;
net.Socket.prototype.push = function (chunk, ...rest) {
  if (on && chunk && !readAt.has(this)) readAt.set(this, performance.now());
  return push.call(this, chunk, ...rest);
};
const write = net.Socket.prototype.write;
net.Socket.prototype.write = function (data, ...rest) {
  const t0 = on ? readAt.get(this) : undefined;
  if (t0 !== undefined && (data?.length ?? 0) > 100) {
    const entry = [t0, performance.now(), NaN];
    requests.push(entry);
    readAt.delete(this);
    setImmediate(() => (entry[2] = performance.now()));
  }
  return write.call(this, data, ...rest);
};

/** How many of `spans` ([from, to] ms) overlap one of `events` (sorted by start). */
function overlapping(spans, events) {
  let n = 0;
  for (const [a, b] of spans) if (events.some(([s, e]) => s < b && e > a)) n++;
  return n;
}

const slowest = (spans) =>
  [...spans].sort((x, y) => y[1] - y[0] - (x[1] - x[0])).slice(0, Math.ceil(spans.length / 100));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** The slowest 1 % of `spans` and what overlapped them. */
function blame(spans) {
  const slow = slowest(spans);
  const gc = overlapping(slow, gcs);
  const timer = overlapping(slow, intervals);
  const both = overlapping(
    slow.filter((s) => overlapping([s], gcs) > 0),
    intervals,
  );
  return { slow: slow.length, gc, timer, either: gc + timer - both };
}

process.on('SIGUSR2', () => {
  if (!on) {
    requests = [];
    gcs = [];
    intervals = [];
    on = true;
    return;
  }
  on = false;
  const server = requests.map(([r, w]) => [r, w]);
  // Each outside span carries its request's idle time: [write, next read, idle].
  const outside = requests.slice(1).map(([r], i) => [requests[i][1], r, requests[i][2]]);
  const afterAnswer = (spans) => ({
    workUs: median(spans.map(([w, , idle]) => (idle - w) * 1000)),
    waitUs: median(spans.map(([w, r, idle]) => (r - Math.max(w, idle)) * 1000)),
  });
  const us = (spans) => spans.map(([a, b]) => (b - a) * 1000);
  if (out)
    writeFileSync(
      out,
      JSON.stringify({
        server: us(server),
        outside: us(outside),
        blame: {
          server: blame(server),
          outside: { ...blame(outside), all: afterAnswer(outside), slowest: afterAnswer(slowest(outside)) },
        },
        gcs: gcs.length,
        intervals: intervals.length,
      }),
    );
});
