import { getPriority, setPriority } from 'node:os';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { type ErrorCode, ERROR_CATALOGUE, ServeError } from '@hloserve/common/errors';
import type { WireInferRequest } from '@hloserve/common/wire';
import { parseHttpInfer } from './http-infer-body.js';

/**
 * Bodies at least this large are parsed on a worker thread: decoding 100 MB of JSON takes
 * seconds of CPU, which on the event loop would hold every other request (gRPC included).
 * Smaller bodies are parsed inline, where a thread hop would cost more than the parse.
 */
export const OFF_THREAD_BYTES = 1 << 20;

/** How much nicer than the server the parser thread runs (nice values: 0 normal, 19 lowest). */
const PARSER_NICE = 10;

interface Job {
  readonly id: number;
  readonly model: string;
  readonly version: string;
  readonly body: Uint8Array;
  readonly headerLength: string | undefined;
  readonly maxJsonBytes: number;
}

type Reply =
  | { readonly id: number; readonly ok: true; readonly request: WireInferRequest }
  | { readonly id: number; readonly ok: false; readonly code: ErrorCode; readonly message: string };

/** Every ArrayBuffer a parsed request holds: handed back to the caller without a copy. */
function buffersOf(req: WireInferRequest): ArrayBuffer[] {
  const set = new Set<ArrayBuffer>();
  for (const i of req.inputs) if (i.data.kind === 'raw') set.add(i.data.bytes.buffer as ArrayBuffer);
  return [...set];
}

/** A body the thread may take over: its own, whole ArrayBuffer (a pooled slice is copied first). */
function ownBuffer(body: Uint8Array): Uint8Array {
  if (
    body.byteOffset === 0 &&
    body.buffer.byteLength === body.byteLength &&
    !(body.buffer instanceof SharedArrayBuffer)
  )
    return body;
  return new Uint8Array(body);
}

/**
 * One parser thread, started on first use. It holds no state between jobs, so when it dies (a
 * body that exhausts its heap limit) the jobs it held fail with INTERNAL, the server keeps
 * serving, and the next large body starts a fresh thread.
 */
class ParserThread {
  #worker: Worker | null = null;
  #next = 1;
  readonly #pending = new Map<number, { resolve(r: WireInferRequest): void; reject(e: unknown): void }>();

  #start(): Worker {
    const w = new Worker(new URL(import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: 1024 },
    });
    w.unref();
    w.on('message', (r: Reply) => {
      const p = this.#pending.get(r.id);
      if (!p) return;
      this.#pending.delete(r.id);
      if (r.ok) p.resolve(r.request);
      else p.reject(new ServeError(r.code in ERROR_CATALOGUE ? r.code : 'HLO_ERR_INTERNAL', r.message));
      if (this.#pending.size === 0) w.unref();
    });
    const fail = (err: Error) => {
      if (this.#worker === w) this.#worker = null;
      for (const p of this.#pending.values())
        p.reject(new ServeError('HLO_ERR_INTERNAL', `the JSON parser thread failed: ${err.message}`));
      this.#pending.clear();
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`exited with code ${code}`)));
    return w;
  }

  parse(job: Omit<Job, 'id'>): Promise<WireInferRequest> {
    const w = (this.#worker ??= this.#start());
    const id = this.#next++;
    const body = ownBuffer(job.body);
    return new Promise<WireInferRequest>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      w.ref();
      w.postMessage({ ...job, id, body } satisfies Job, [body.buffer as ArrayBuffer]);
    });
  }
}

let thread: ParserThread | null = null;

/** parseHttpInfer, on the parser thread when the body is large. */
export async function parseHttpInferRequest(
  model: string,
  version: string,
  body: Uint8Array,
  headerLength: string | undefined,
  maxJsonBytes: number,
): Promise<WireInferRequest> {
  if (body.byteLength < OFF_THREAD_BYTES) return parseHttpInfer(model, version, body, headerLength, maxJsonBytes);
  thread ??= new ParserThread();
  return thread.parse({ model, version, body, headerLength, maxJsonBytes });
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  // Linux nice values are per thread, and setpriority(0) names the calling thread: the parser
  // yields the CPU to the event loop's thread when both want it, so small requests keep their
  // latency while a large body is decoded. (Elsewhere it would renice the whole process.)
  if (process.platform === 'linux') {
    try {
      setPriority(Math.min(19, getPriority() + PARSER_NICE));
    } catch {
      // not permitted: parse at the server's priority
    }
  }
  port.on('message', (job: Job) => {
    let reply: Reply;
    let transfer: ArrayBuffer[] = [];
    try {
      const request = parseHttpInfer(job.model, job.version, job.body, job.headerLength, job.maxJsonBytes);
      reply = { id: job.id, ok: true, request };
      transfer = buffersOf(request);
    } catch (err) {
      const e = err instanceof ServeError ? err : new ServeError('HLO_ERR_INTERNAL', String((err as Error)?.message));
      reply = { id: job.id, ok: false, code: e.code, message: e.message };
    }
    port.postMessage(reply, transfer);
  });
}
