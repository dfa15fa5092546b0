import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';
import { idleThisThread } from '@hloserve/native/thread-priority';
import { type ErrorCode, isErrorCode, ServeError } from '@hloserve/common/errors';
import type { WireInferRequest } from '@hloserve/common/wire';
import { parseHttpInfer } from './http-infer-body.js';

/**
 * Bodies at least this large are parsed on a worker thread: decoding 100 MB of JSON takes
 * seconds of CPU, which on the event loop would hold every other request (gRPC included).
 * Smaller bodies are parsed inline, where a thread hop would cost more than the parse.
 */
export const OFF_THREAD_BYTES = 1 << 20;

/** How much nicer than the server the parser thread runs (nice values: 0 normal, 19 lowest). */
export const PARSER_NICE = 10;

/**
 * A streamed body's chunks are handed to the thread in batches of about this size: one message
 * per socket read would cost more in messaging than the copy it saves.
 */
const BATCH_BYTES = 1 << 20;

/** Bytes handed to the thread and not yet stored by it, past which the upload's socket is paused. */
const HIGH_WATER_BYTES = 8 << 20;

type Job =
  | {
      readonly kind: 'parse';
      readonly id: number;
      readonly model: string;
      readonly version: string;
      readonly body: Uint8Array;
      readonly headerLength: string | undefined;
      readonly maxJsonBytes: number;
    }
  | { readonly kind: 'open'; readonly id: number; readonly bytes: number; readonly maxJsonBytes: number }
  | { readonly kind: 'chunks'; readonly id: number; readonly chunks: Uint8Array[] }
  | { readonly kind: 'close'; readonly id: number }
  | { readonly kind: 'drop'; readonly id: number };

type Reply =
  | { readonly id: number; readonly kind: 'ok'; readonly request: WireInferRequest }
  | { readonly id: number; readonly kind: 'error'; readonly code: ErrorCode; readonly message: string }
  | { readonly id: number; readonly kind: 'stored'; readonly bytes: number };

interface Pending {
  resolve(r: WireInferRequest): void;
  reject(e: unknown): void;
  stored?(bytes: number): void;
}

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
 * A JSON body handed to the parser thread while it arrives, so the event loop never holds it
 * whole: each batch of socket chunks is copied once into a message (recently freed, warm memory)
 * and the thread stores it in a buffer of the declared length. The pages of that buffer are
 * faulted in on the thread, not on the event loop, and the socket's chunks die young, so the
 * main isolate sees no large allocation and no old-generation growth while the body arrives.
 */
export interface JsonUpload {
  /** Takes one chunk; false when the caller should pause the socket until `onDrain` fires. */
  push(chunk: Uint8Array): boolean;
  /** Called when the thread has caught up after `push` returned false. */
  onDrain(fn: () => void): void;
  /** The whole body has arrived: the thread parses it (model and version are left empty). */
  end(): Promise<WireInferRequest>;
  /** The client went away: the thread frees what it stored. */
  abort(): void;
}

/**
 * One parser thread, started on first use. It holds no state between jobs other than uploads in
 * progress, so when it dies (a body that exhausts its heap limit) the jobs it held fail with
 * INTERNAL, the server keeps serving, and the next large body starts a fresh thread.
 */
class ParserThread {
  #worker: Worker | null = null;
  #next = 1;
  readonly #pending = new Map<number, Pending>();

  #start(): Worker {
    const w = new Worker(new URL(import.meta.url), {
      // The young generation the serving flag --max-semi-space-size=8 gave it before the entry point
      // set that flag back (node-code-cache.ts).
      resourceLimits: { maxOldGenerationSizeMb: 1024, maxYoungGenerationSizeMb: 16 },
    });
    w.unref();
    w.on('message', (r: Reply) => {
      const p = this.#pending.get(r.id);
      if (!p) return;
      if (r.kind === 'stored') {
        p.stored?.(r.bytes);
        return;
      }
      this.#pending.delete(r.id);
      if (r.kind === 'ok') p.resolve(r.request);
      else p.reject(new ServeError(isErrorCode(r.code) ? r.code : 'HLO_ERR_INTERNAL', r.message));
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

  #submit(job: Job, transfer: ArrayBuffer[], pending: Pending): Worker {
    const w = (this.#worker ??= this.#start());
    this.#pending.set(job.id, pending);
    w.ref();
    w.postMessage(job, transfer);
    return w;
  }

  parse(job: Omit<Extract<Job, { kind: 'parse' }>, 'id' | 'kind'>): Promise<WireInferRequest> {
    const body = ownBuffer(job.body);
    return new Promise<WireInferRequest>((resolve, reject) => {
      this.#submit({ ...job, kind: 'parse', id: this.#next++, body }, [body.buffer as ArrayBuffer], {
        resolve,
        reject,
      });
    });
  }

  upload(bytes: number, maxJsonBytes: number): JsonUpload {
    const id = this.#next++;
    let batch: Uint8Array[] = [];
    let batched = 0;
    let sent = 0;
    let stored = 0;
    let drain: (() => void) | null = null;
    let paused = false;
    let settled = false;
    let outcome: { ok: WireInferRequest } | { err: unknown } | null = null;
    let waiter: Pending | null = null;
    const finish = (o: { ok: WireInferRequest } | { err: unknown }) => {
      settled = true;
      if (waiter) {
        if ('ok' in o) waiter.resolve(o.ok);
        else waiter.reject(o.err);
      } else outcome = o;
      if (paused) {
        paused = false;
        drain?.();
      }
    };
    const w = this.#submit({ kind: 'open', id, bytes, maxJsonBytes }, [], {
      resolve: (r) => finish({ ok: r }),
      reject: (e) => finish({ err: e }),
      stored: (n) => {
        stored = n;
        if (paused && sent - stored <= HIGH_WATER_BYTES / 2) {
          paused = false;
          drain?.();
        }
      },
    });
    const flush = () => {
      if (batched === 0) return;
      // A structured clone (not a transfer): socket chunks may share their memory with other
      // slices, and the copy lands in recently freed memory rather than fresh pages.
      if (!settled && this.#worker === w) w.postMessage({ kind: 'chunks', id, chunks: batch } satisfies Job);
      sent += batched;
      batch = [];
      batched = 0;
    };
    return {
      push: (chunk) => {
        if (settled) return true;
        // A clone carries a view's whole ArrayBuffer: a small slice of a large one is copied out.
        batch.push(chunk.buffer.byteLength > 2 * chunk.byteLength + 4096 ? new Uint8Array(chunk) : chunk);
        batched += chunk.byteLength;
        if (batched >= BATCH_BYTES) flush();
        paused = sent - stored > HIGH_WATER_BYTES;
        return !paused;
      },
      onDrain: (fn) => {
        drain = fn;
      },
      end: () => {
        flush();
        if (!settled && this.#worker === w) w.postMessage({ kind: 'close', id } satisfies Job);
        return new Promise<WireInferRequest>((resolve, reject) => {
          const o = outcome;
          if (o === null) waiter = { resolve, reject };
          else if ('ok' in o) resolve(o.ok);
          else reject(o.err);
        });
      },
      abort: () => {
        if (settled) return;
        batch = [];
        if (this.#worker === w) w.postMessage({ kind: 'drop', id } satisfies Job);
        this.#pending.delete(id);
        if (this.#pending.size === 0) w.unref();
        finish({ err: new ServeError('HLO_ERR_CANCELLED', 'the client closed the request before its body arrived') });
      },
    };
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

/** A JSON body of `bytes` declared bytes (at most maxJsonBytes), handed to the parser thread as it arrives. */
export function openJsonUpload(bytes: number, maxJsonBytes: number): JsonUpload {
  thread ??= new ParserThread();
  return thread.upload(bytes, maxJsonBytes);
}

/**
 * Lowers the calling thread's CPU priority, the parser thread's alone: nice +PARSER_NICE. Linux
 * keeps a nice value per thread (a deviation from POSIX that setpriority(2) documents), and
 * /proc/thread-self names this thread's own id, so setpriority on that id renices the parser
 * alone. Elsewhere (no per-thread nice) it does nothing, rather than renice the whole server.
 * HLOSERVE_PARSER_PRIORITY=idle puts it at SCHED_IDLE instead (nice where that is refused): not
 * the default, because on a loaded 2-vCPU host small requests' p99 fared worse with it
 * (bench/RESULTS.md, issue 19, harden2 section); why is not established (one candidate: a thread
 * that runs only on an idle core held off while it holds a lock the event loop then waits on).
 */
function lowerThreadPriority(): void {
  if (process.platform !== 'linux') return;
  if (process.env.HLOSERVE_PARSER_PRIORITY === 'idle' && idleThisThread()) return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isSafeInteger(tid) || tid <= 0 || tid === process.pid) return;
    setPriority(tid, Math.min(19, getPriority(tid) + PARSER_NICE));
  } catch {
    // not permitted or no /proc: parse at the server's priority
  }
}

/**
 * A body being received on the thread. Its buffer of the declared length is taken only once a
 * quarter of it has arrived (the chunks are kept until then): a client that declares the JSON
 * limit and sends nothing makes the server allocate nothing.
 */
class ThreadUpload {
  #chunks: Uint8Array[] | null = [];
  #body: Uint8Array | null = null;
  #size = 0;
  constructor(
    readonly declared: number,
    readonly maxJsonBytes: number,
  ) {}

  get size(): number {
    return this.#size;
  }

  store(chunks: readonly Uint8Array[]): void {
    for (const c of chunks) {
      if (this.#size + c.byteLength > this.declared)
        throw new ServeError(
          'HLO_ERR_INVALID_ARGUMENT',
          `the body runs past its declared length of ${this.declared} bytes`,
        );
      if (this.#body) this.#body.set(c, this.#size);
      else this.#chunks!.push(c);
      this.#size += c.byteLength;
    }
    if (this.#chunks && this.#size >= this.declared / 4) {
      const body = new Uint8Array(this.declared);
      let at = 0;
      for (const c of this.#chunks) {
        body.set(c, at);
        at += c.byteLength;
      }
      this.#body = body;
      this.#chunks = null;
    }
  }

  bytes(): Uint8Array {
    if (this.#body) return this.#body.subarray(0, this.#size);
    const body = new Uint8Array(this.#size);
    let at = 0;
    for (const c of this.#chunks!) {
      body.set(c, at);
      at += c.byteLength;
    }
    return body;
  }
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  lowerThreadPriority();
  const uploads = new Map<number, ThreadUpload>();
  const reply = (r: Reply, transfer: ArrayBuffer[] = []) => port.postMessage(r, transfer);
  const fail = (id: number, err: unknown) => {
    const e = err instanceof ServeError ? err : new ServeError('HLO_ERR_INTERNAL', String((err as Error)?.message));
    reply({ id, kind: 'error', code: e.code, message: e.message });
  };
  const parse = (id: number, run: () => WireInferRequest) => {
    try {
      const request = run();
      reply({ id, kind: 'ok', request }, buffersOf(request));
    } catch (err) {
      fail(id, err);
    }
  };
  port.on('message', (job: Job) => {
    switch (job.kind) {
      case 'parse':
        parse(job.id, () => parseHttpInfer(job.model, job.version, job.body, job.headerLength, job.maxJsonBytes));
        return;
      case 'open':
        uploads.set(job.id, new ThreadUpload(job.bytes, job.maxJsonBytes));
        return;
      case 'chunks': {
        const u = uploads.get(job.id);
        if (!u) return;
        try {
          u.store(job.chunks);
          reply({ id: job.id, kind: 'stored', bytes: u.size });
        } catch (err) {
          uploads.delete(job.id);
          fail(job.id, err);
        }
        return;
      }
      case 'close': {
        const u = uploads.get(job.id);
        if (!u) return;
        uploads.delete(job.id);
        parse(job.id, () => parseHttpInfer('', '', u.bytes(), undefined, u.maxJsonBytes));
        return;
      }
      case 'drop':
        uploads.delete(job.id);
        return;
    }
  });
}
