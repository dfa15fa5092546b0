/**
 * One worker behind the gateway: a grpc-js channel that sends and receives raw bytes (bodies are
 * forwarded as they came), an outbound in-flight cap with a FIFO wait, and its HTTP and metrics
 * addresses. The address can change (a restarted worker on an OS-assigned port).
 */
import { Client, credentials, Metadata, type ServiceError, status as Status } from '@grpc/grpc-js';
import { setClampedTimeout } from '@hloserve/common/timers';

export interface WorkerAddress {
  readonly grpc: string;
  readonly http: string;
  /** host:port of the worker's /metrics, or null when it has none. */
  readonly metrics: string | null;
}

export interface RawAnswer {
  readonly ok: boolean;
  readonly body?: Buffer;
  readonly code?: number;
  readonly details?: string;
}

const identity = (b: Buffer): Buffer => b;

export class WorkerClient {
  private client: Client;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  ready = false;
  /** Health rounds in a row without an answer. */
  silentRounds = 0;

  constructor(
    readonly name: string,
    private addr: WorkerAddress,
    readonly maxInFlight: number,
    private readonly channelOptions: Record<string, number>,
  ) {
    this.client = this.connect();
  }

  private connect(): Client {
    return new Client(this.addr.grpc, credentials.createInsecure(), {
      ...this.channelOptions,
      // A worker that restarts should be reachable again at once, not after grpc-js' backoff.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1000,
    });
  }

  get address(): WorkerAddress {
    return this.addr;
  }

  setAddress(addr: WorkerAddress): void {
    if (addr.grpc === this.addr.grpc && addr.http === this.addr.http && addr.metrics === this.addr.metrics) return;
    const old = this.client;
    this.addr = addr;
    this.client = this.connect();
    old.close();
  }

  get outstanding(): number {
    return this.inFlight;
  }

  /** Waits for an outbound slot; false when the deadline passed first. */
  private acquire(deadlineMs: number | null): Promise<boolean> {
    if (this.inFlight < this.maxInFlight) {
      this.inFlight++;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const grant = () => {
        if (timer) clearTimeout(timer);
        this.inFlight++;
        resolve(true);
      };
      this.waiting.push(grant);
      if (deadlineMs !== null) {
        timer = setClampedTimeout(() => {
          const i = this.waiting.indexOf(grant);
          if (i >= 0) this.waiting.splice(i, 1);
          resolve(false);
        }, deadlineMs - Date.now());
      }
    });
  }

  private releaseSlot(): void {
    this.inFlight--;
    const next = this.waiting.shift();
    if (next) next();
  }

  /**
   * One unary call with raw bytes. `deadlineMs` is epoch ms (forwarded to the millisecond);
   * `onCancel` registers a hook the caller fires when its own client goes away.
   */
  async call(
    path: string,
    body: Buffer,
    deadlineMs: number | null,
    metadata?: Metadata,
    onCancel?: (cancel: () => void) => void,
    /** Health and control calls skip the cap: a busy worker is not a silent one. */
    control = false,
  ): Promise<RawAnswer> {
    if (control) return this.send(path, body, deadlineMs, metadata, onCancel, false);
    if (!(await this.acquire(deadlineMs))) {
      return { ok: false, code: Status.DEADLINE_EXCEEDED, details: 'deadline passed waiting for a worker slot' };
    }
    return this.send(path, body, deadlineMs, metadata, onCancel, true);
  }

  private send(
    path: string,
    body: Buffer,
    deadlineMs: number | null,
    metadata: Metadata | undefined,
    onCancel: ((cancel: () => void) => void) | undefined,
    holdsSlot: boolean,
  ): Promise<RawAnswer> {
    return new Promise<RawAnswer>((resolve) => {
      const call = this.client.makeUnaryRequest<Buffer, Buffer>(
        path,
        identity,
        identity,
        body,
        metadata ?? new Metadata(),
        deadlineMs === null ? {} : { deadline: new Date(deadlineMs) },
        (err: ServiceError | null, res?: Buffer) => {
          if (holdsSlot) this.releaseSlot();
          if (err) resolve({ ok: false, code: err.code, details: err.details });
          else resolve({ ok: true, body: res! });
        },
      );
      onCancel?.(() => call.cancel());
    });
  }

  close(): void {
    this.client.close();
  }
}
