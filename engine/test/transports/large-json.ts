import { request } from 'node:http';
import { encodeModelInferRequest, ModelInferRequest } from '@hloserve/proto';
import type { Surface } from './surface.js';

const N = 784;

/** A KServe JSON body of about `bytes` bytes: mlp rows of 784 numbers (more rows than it serves). */
export function largeJsonBody(bytes: number): { body: Buffer; rows: number } {
  const row = Buffer.from(`[${Array.from({ length: N }, (_, i) => ((i * 37) % 1000) / 997).join(',')}],`);
  const rows = Math.max(1, Math.floor(bytes / row.byteLength));
  const head = Buffer.from(`{"inputs":[{"name":"x","datatype":"FP32","shape":[${rows},${N}],"data":[`);
  const tail = Buffer.from(']}]}');
  const body = Buffer.alloc(head.byteLength + rows * row.byteLength - 1 + tail.byteLength);
  head.copy(body, 0);
  body.fill(row, head.byteLength, head.byteLength + rows * row.byteLength);
  tail.copy(body, head.byteLength + rows * row.byteLength - 1);
  return { body, rows };
}

const small = encodeModelInferRequest(
  ModelInferRequest.fromPartial({
    modelName: 'mlp',
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1, N] }],
    rawInputContents: [new Uint8Array(new Float32Array(N).fill(0.5).buffer)],
  }),
);

export interface SmallRun {
  readonly latenciesMs: number[];
  readonly failures: string[];
}

/** Sends small gRPC ModelInfer requests back to back (`concurrency` at a time) until `stop()` resolves true. */
export async function smallRequests(s: Surface, concurrency: number, stop: () => boolean): Promise<SmallRun> {
  const latenciesMs: number[] = [];
  const failures: string[] = [];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!stop()) {
        const t = performance.now();
        const r = await s.unary('ModelInfer', small);
        latenciesMs.push(performance.now() - t);
        if (r.err) failures.push(`${r.err.code} ${r.err.details}`);
      }
    }),
  );
  return { latenciesMs, failures };
}

/** POSTs a body to the listening HTTP server; resolves with status and body text. */
export function postInfer(port: number, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v2/models/mlp/infer',
        headers: { 'content-type': 'application/json', 'content-length': body.byteLength },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/** Small-request latencies without, then while, a large JSON body is received and decoded. */
export async function measureLargeJson(
  s: Surface,
  port: number,
  body: Buffer,
  opts: { baselineMs: number; concurrency: number },
): Promise<{ baseline: SmallRun; during: SmallRun; big: { status: number; text: string }; bigMs: number }> {
  const until = performance.now() + opts.baselineMs;
  const baseline = await smallRequests(s, opts.concurrency, () => performance.now() > until);
  let done = false;
  const t = performance.now();
  const bigP = postInfer(port, body).finally(() => (done = true));
  const during = await smallRequests(s, opts.concurrency, () => done);
  const big = await bigP;
  return { baseline, during, big, bigMs: performance.now() - t };
}
