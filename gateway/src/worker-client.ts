/**
 * One worker behind the gateway: an HTTP/2 connection that sends and receives raw message bytes
 * (bodies are forwarded as they came), an outbound in-flight cap with a FIFO wait, and its HTTP
 * and metrics addresses. The address can change (a restarted worker on an OS-assigned port).
 */
import { status as Status } from '@grpc/grpc-js';
import { setClampedTimeout } from '@hloserve/common/timers';
import type { GrpcHeaders } from '@hloserve/common/h2/grpc-wire';
import { type RawAnswer, WorkerChannel } from './h2/worker-channel.js';

export type { RawAnswer } from './h2/worker-channel.js';

export interface WorkerAddress {
  readonly grpc: string;
  readonly http: string;
  /** host:port of the worker's /metrics, or null when it has none. */
  readonly metrics: string | null;
  /** host:port of the worker's console and control API, or absent when it has none. */
  readonly console?: string | null;
}

export class WorkerClient {
  private channel: WorkerChannel;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  ready = false;
  /** Health rounds in a row without an answer. */
  silentRounds = 0;

  constructor(
    readonly name: string,
    private addr: WorkerAddress,
    readonly maxInFlight: number,
    private readonly maxMessageBytes: number,
  ) {
    // Connects on first use and again after a failure, with no backoff: a worker that restarts is
    // reachable at once.
    this.channel = new WorkerChannel(addr.grpc, maxMessageBytes);
  }

  get address(): WorkerAddress {
    return this.addr;
  }

  setAddress(addr: WorkerAddress): void {
    if (
      addr.grpc === this.addr.grpc &&
      addr.http === this.addr.http &&
      addr.metrics === this.addr.metrics &&
      addr.console === this.addr.console
    )
      return;
    const old = this.channel;
    this.addr = addr;
    this.channel = new WorkerChannel(addr.grpc, this.maxMessageBytes);
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
    metadata?: GrpcHeaders,
    onCancel?: (cancel: () => void) => void,
    /**
     * Health and control calls skip the cap (a busy worker is not a silent one) and time out on
     * their own, having no client to cancel them.
     */
    control = false,
  ): Promise<RawAnswer> {
    if (control) return this.channel.call(path, body, deadlineMs, metadata, onCancel, true);
    if (this.inFlight < this.maxInFlight) this.inFlight++;
    else if (!(await this.acquire(deadlineMs)))
      return { ok: false, code: Status.DEADLINE_EXCEEDED, details: 'deadline passed waiting for a worker slot' };
    try {
      return await this.channel.call(path, body, deadlineMs, metadata, onCancel, false);
    } finally {
      this.releaseSlot();
    }
  }

  close(): void {
    this.channel.close();
  }
}
