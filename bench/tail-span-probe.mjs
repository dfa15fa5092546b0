// Preloaded into a server by bench/tail.mjs --span (node --import): splits each single-caller
// request's time at the server's socket. "server span": from the read that brings a request's
// bytes (the socket's push) to the write of its answer (the one write over 100 bytes: a unary
// answer's HEADERS, DATA and trailers in one); "outside": from that write to the next request's
// read (the kernel both ways and the client). Only meaningful at concurrency 1 on one connection.
// SIGUSR2 starts a window (clears what was recorded); a second SIGUSR2 writes the window's
// spans to HLOSERVE_TAIL_SPAN_OUT as JSON and stops recording. A diagnostic: it patches
// net.Socket's push and write in this process, nothing else.
import { writeFileSync } from 'node:fs';
import net from 'node:net';

const out = process.env.HLOSERVE_TAIL_SPAN_OUT;
let on = false;
let server = [];
let outside = [];
let lastWrite = 0;
const readAt = new WeakMap();
const push = net.Socket.prototype.push;
net.Socket.prototype.push = function (chunk, ...rest) {
  if (on && chunk && !readAt.has(this)) {
    const t = performance.now();
    readAt.set(this, t);
    if (lastWrite > 0) outside.push((t - lastWrite) * 1000);
  }
  return push.call(this, chunk, ...rest);
};
const write = net.Socket.prototype.write;
net.Socket.prototype.write = function (data, ...rest) {
  const t0 = on ? readAt.get(this) : undefined;
  if (t0 !== undefined && (data?.length ?? 0) > 100) {
    lastWrite = performance.now();
    server.push((lastWrite - t0) * 1000);
    readAt.delete(this);
  }
  return write.call(this, data, ...rest);
};
process.on('SIGUSR2', () => {
  if (!on) {
    server = [];
    outside = [];
    lastWrite = 0;
    on = true;
    return;
  }
  on = false;
  if (out) writeFileSync(out, JSON.stringify({ server, outside }));
});
