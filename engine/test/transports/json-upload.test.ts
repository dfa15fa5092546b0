import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { after, before, suite, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { OFF_THREAD_BYTES, PARSER_NICE } from '../../src/transports/http-infer-parser.js';
import { postInfer } from './large-json.js';
import { startSurface, type Surface } from './surface.js';

const N = 784;

/** An mlp JSON body of `rows` rows, padded with spaces between values to about `bytes` bytes. */
function paddedBody(rows: number, bytes: number): { body: Buffer; compact: Buffer } {
  const values = Array.from({ length: rows }, (_, r) =>
    Array.from({ length: N }, (_, i) => (((i + r) * 37) % 1000) / 997),
  );
  const pad = ' '.repeat(Math.max(0, Math.ceil(bytes / (rows * N))));
  const text = (sep: string) =>
    `{"inputs":[{"name":"x","datatype":"FP32","shape":[${rows},${N}],"data":[${values
      .map((v) => `[${v.join(',' + sep)}]`)
      .join(',')}]}]}`;
  return { body: Buffer.from(text(pad)), compact: Buffer.from(text('')) };
}

/** Writes a POST with the given headers and body pieces over a raw socket; resolves with the answer. */
function rawPost(
  port: number,
  contentLength: number,
  pieces: Buffer[],
  opts: { pauseMs?: number; destroyAfter?: number } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const sock = connect(port, '127.0.0.1', async () => {
      sock.write(
        `POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`,
      );
      for (const [i, p] of pieces.entries()) {
        if (opts.destroyAfter === i) {
          sock.destroy();
          resolve('');
          return;
        }
        if (!sock.write(p)) await new Promise((r) => sock.once('drain', r));
        if (opts.pauseMs) await sleep(opts.pauseMs);
      }
    });
    sock.on('data', (d) => {
      text += d.toString();
      const head = text.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(text.slice(0, head));
      if (head >= 0 && length && Buffer.byteLength(text.slice(head + 4)) >= Number(length[1])) sock.end();
    });
    sock.on('close', () => resolve(text));
    sock.on('error', reject);
  });
}

const SCHED_IDLE = 5;

/** Each thread of this process: its scheduling policy and nice value (/proc/PID/task/TID/stat). */
function threadPriorities(): Map<number, { policy: number; nice: number }> {
  const out = new Map<number, { policy: number; nice: number }>();
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(Number(tid), { policy: Number(f[38]), nice: Number(f[16]) });
  }
  return out;
}

const split = (b: Buffer, n: number) =>
  Array.from({ length: n }, (_, i) => b.subarray(Math.floor((i * b.length) / n), Math.floor(((i + 1) * b.length) / n)));

suite('a large JSON body is handed to the parser thread while it arrives', () => {
  let s: Surface;
  let port: number;
  before(async () => {
    s = await startSurface({ maxJsonBytes: 16 << 20 });
    await s.http.listen({ host: '127.0.0.1', port: 0 });
    port = (s.http.server.address() as { port: number }).port;
  });
  after(() => s.close());

  // First in the suite: the parser thread starts on the first large body, so the threads that
  // exist before it are the server's own.
  test('the parser thread runs at a lower CPU priority than the event loop, and only it does', async (t) => {
    if (process.platform !== 'linux') return t.skip('per-thread scheduling is a Linux property');
    const before = threadPriorities();
    const main = before.get(process.pid)!;
    if (main.nice >= 19) return t.skip(`the server already runs at nice ${main.nice}`);
    const { body } = paddedBody(8, 2 << 20);
    assert.equal((await postInfer(port, body)).status, 200);
    const after = threadPriorities();
    for (const [tid, p] of before) {
      const now = after.get(tid);
      if (now) assert.deepEqual(now, p, `thread ${tid} changed priority`);
    }
    const lowered = [...after].filter(
      ([tid, p]) => !before.has(tid) && (p.policy !== main.policy || p.nice !== main.nice),
    );
    assert.equal(lowered.length, 1, JSON.stringify([...after]));
    const [, parser] = lowered[0]!;
    // SCHED_IDLE under HLOSERVE_PARSER_PRIORITY=idle, else PARSER_NICE levels nicer (19 at most).
    if (parser.policy === SCHED_IDLE) assert.equal(parser.nice, main.nice);
    else assert.deepEqual(parser, { policy: main.policy, nice: Math.min(19, main.nice + PARSER_NICE) });
  });

  test('a body sent in many small pieces is served like the same tensor sent small', async () => {
    const { body, compact } = paddedBody(8, 3 << 20);
    assert.ok(body.byteLength > OFF_THREAD_BYTES && compact.byteLength < OFF_THREAD_BYTES);
    const streamed = await rawPost(port, body.byteLength, split(body, 300), { pauseMs: 1 });
    const inline = await postInfer(port, compact);
    assert.match(streamed, /^HTTP\/1.1 200/, streamed.slice(0, 300));
    assert.equal(inline.status, 200, inline.text);
    assert.deepEqual(
      JSON.parse(streamed.slice(streamed.indexOf('\r\n\r\n') + 4)).outputs,
      JSON.parse(inline.text).outputs,
    );
  });

  test('malformed JSON in a streamed body answers 400 with the catalogue code', async () => {
    const { body } = paddedBody(8, 3 << 20);
    body[body.byteLength >> 1] = 0x7b; // '{' in the middle of the data
    const r = await postInfer(port, body);
    assert.equal(r.status, 400, r.text);
    assert.equal((JSON.parse(r.text) as { code: string }).code, 'HLO_ERR_INVALID_ARGUMENT');
  });

  test('a client that goes away mid-body leaves the server serving', async () => {
    const { body, compact } = paddedBody(8, 8 << 20);
    for (let i = 0; i < 3; i++) await rawPost(port, body.byteLength, split(body, 16), { destroyAfter: 5 + i });
    const r = await postInfer(port, compact);
    assert.equal(r.status, 200, r.text);
    const again = await postInfer(port, body);
    assert.equal(again.status, 200, again.text.slice(0, 300));
  });
});

suite('a streamed JSON body that stops arriving', () => {
  let s: Surface;
  before(async () => {
    s = await startSurface({ requestTimeoutMs: 1000, headersTimeoutMs: 1000 });
    await s.http.listen({ host: '127.0.0.1', port: 0 });
  });
  after(() => s.close());

  test('is answered within the request timeout, and the server keeps serving', async () => {
    const port = (s.http.server.address() as { port: number }).port;
    const t0 = Date.now();
    const answer = await rawPost(port, 4 << 20, [
      Buffer.from('{"inputs":[{"name":"x","data":[' + '1,'.repeat(1 << 18)),
    ]);
    assert.ok(Date.now() - t0 < 5000, `${Date.now() - t0} ms`);
    if (answer) assert.match(answer, /HLO_ERR_DEADLINE_EXCEEDED/);
    const { compact } = paddedBody(1, 0);
    assert.equal((await postInfer(port, compact)).status, 200);
  });
});
