/**
 * InferenceClient: one connection to a KServe V2 server over gRPC (default) or HTTP. It owns the
 * transport, the default deadline and retry policy, and the pool of shared-memory regions that
 * `infer(..., { sharedMemory: true })` uses; model handles come from `model(name)`.
 */
import { ClientError, Status } from './client-error.js';
import { resolveDeadline, type Attempt, type CallOptions } from './deadline.js';
import { GrpcTransport, type GrpcTransportOptions } from './grpc-transport.js';
import { HttpTransport, type HttpTransportOptions } from './http-transport.js';
import { ModelHandle, type ModelHost } from './model.js';
import { DEFAULT_RETRY, withRetry, type RetryPolicy } from './retry.js';
import type { SystemSharedMemoryRegion } from './shared-memory.js';
import { StagingPool, type StagingLease } from './staging.js';
import type { RegionStatus, RepositoryModel, ServerMetadata, Transport } from './transport.js';

export interface InferenceClientOptions {
  /** 'host:port' (or an http:// URL for HTTP). */
  url: string;
  /** Default 'grpc'. */
  protocol?: 'grpc' | 'http';
  /** Default deadline of every call in milliseconds (reference: 10 s); null for none. */
  timeoutMs?: number | null;
  /** Retry policy (defaults: the reference's); false for a single attempt. */
  retry?: Partial<RetryPolicy> | false;
  grpc?: GrpcTransportOptions;
  http?: HttpTransportOptions;
  /** Where the pooled shared-memory regions are created (default /dev/shm). */
  sharedMemoryRoot?: string;
  /** After the server refused a region under `sharedMemory: 'auto'`, stay inline this long (default 60 s). */
  sharedMemoryRetryMs?: number;
}

export class InferenceClient {
  readonly transport: Transport;
  readonly #timeoutMs: number | null;
  readonly #retry: RetryPolicy | null;
  readonly #staging: StagingPool;
  readonly #host: ModelHost;

  constructor(opts: InferenceClientOptions) {
    this.transport =
      (opts.protocol ?? 'grpc') === 'grpc'
        ? new GrpcTransport(opts.url, opts.grpc)
        : new HttpTransport(opts.url, opts.http);
    this.#timeoutMs = opts.timeoutMs === undefined ? 10_000 : opts.timeoutMs;
    this.#retry = opts.retry === false ? null : { ...DEFAULT_RETRY, ...opts.retry };
    this.#staging = new StagingPool(
      {
        register: (r) => this.registerSystemSharedMemory(r),
        unregister: (r) => this.unregisterSystemSharedMemory(r, { retry: false }),
      },
      { root: opts.sharedMemoryRoot },
    );
    const retryMs = opts.sharedMemoryRetryMs ?? 60_000;
    let inlineUntil = 0;
    this.#host = {
      transport: this.transport,
      run: (what, o, fn) => this.#run(what, o, fn),
      stage: (bytes: number): Promise<StagingLease> => this.#staging.acquire(bytes),
      register: (r) => this.registerSystemSharedMemory(r),
      autoSharedMemory: {
        usable: () => Date.now() >= inlineUntil,
        refused: () => {
          inlineUntil = Date.now() + retryMs;
        },
      },
    };
  }

  /** Runs one logical call: resolves its deadline, then attempts it under the retry policy. */
  #run<T>(what: string, opts: CallOptions, fn: (a: Attempt) => Promise<T>): Promise<T> {
    const deadlineMs = resolveDeadline(opts, this.#timeoutMs);
    const policy =
      opts.retry === false || this.#retry === null
        ? null
        : opts.retry === undefined
          ? this.#retry
          : { ...this.#retry, ...opts.retry };
    return withRetry(what, policy, { deadlineMs, signal: opts.signal }, fn, (e) => this.transport.toError(e));
  }

  model(name: string, version = ''): ModelHandle {
    return new ModelHandle(this.#host, name, version);
  }

  /** Liveness: a single attempt, never retried (a health check must answer now). */
  serverLive(opts: CallOptions = {}): Promise<boolean> {
    return this.#run('server live', { ...opts, retry: false }, (a) => this.transport.serverLive(a));
  }

  serverReady(opts: CallOptions = {}): Promise<boolean> {
    return this.#run('server ready', { ...opts, retry: false }, (a) => this.transport.serverReady(a));
  }

  serverMetadata(opts: CallOptions = {}): Promise<ServerMetadata> {
    return this.#run('server metadata', opts, (a) => this.transport.serverMetadata(a));
  }

  /** The models in the repository with their state; `readyOnly` lists only those serving. */
  repositoryIndex(opts: CallOptions & { readyOnly?: boolean } = {}): Promise<RepositoryModel[]> {
    return this.#run('repository index', opts, (a) => this.transport.repositoryIndex(a, opts.readyOnly ?? false));
  }

  /** Registers a region with the server under its name (the whole region from offset 0). */
  registerSystemSharedMemory(region: SystemSharedMemoryRegion, opts: CallOptions = {}): Promise<void> {
    return this.#run('register shared memory', opts, (a) =>
      this.transport.registerSystemSharedMemory(a, region.name, region.key, 0, region.byteSize),
    );
  }

  /** Unregisters one region (by object or name); '' unregisters every region of the server. */
  unregisterSystemSharedMemory(region: SystemSharedMemoryRegion | string, opts: CallOptions = {}): Promise<void> {
    const name = typeof region === 'string' ? region : region.name;
    return this.#run('unregister shared memory', opts, (a) => this.transport.unregisterSystemSharedMemory(a, name));
  }

  /** The server's registered regions ('' = all); NOT_FOUND for an unknown name. */
  systemSharedMemoryStatus(name = '', opts: CallOptions = {}): Promise<RegionStatus[]> {
    return this.#run('shared memory status', opts, (a) => this.transport.systemSharedMemoryStatus(a, name));
  }

  /** Unregisters and removes the pooled regions, then closes the connection. */
  async close(): Promise<void> {
    try {
      await this.#staging.close();
    } finally {
      this.transport.close();
    }
  }
}

export { ClientError, Status };
