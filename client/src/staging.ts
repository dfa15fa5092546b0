/**
 * The pool of shared-memory regions behind `infer(..., { sharedMemory: true })`. A call leases one
 * region big enough for all of its inputs and outputs and gives it back when done, so concurrent
 * calls never share bytes; regions are registered once and reused, and grow (by replacement) when
 * a larger call comes. `stale` marks a region the server no longer knows (it restarted): the call
 * re-registers it once and sends again, as the reference client does.
 */
import { randomBytes } from 'node:crypto';
import { SystemSharedMemoryRegion } from './shared-memory.js';

/** Regions are at least this big, and sizes round up to a power of two so they get reused. */
const MIN_REGION_BYTES = 1 << 20;

/** Tensor offsets inside a region are aligned so the server's reads start on a cache line. */
export const STAGING_ALIGN = 64;

export const alignUp = (n: number, to = STAGING_ALIGN): number => Math.ceil(n / to) * to;

export interface StagingLease {
  readonly region: SystemSharedMemoryRegion;
  release(): void;
}

export interface StagingRegistrar {
  register(region: SystemSharedMemoryRegion): Promise<void>;
  unregister(region: SystemSharedMemoryRegion): Promise<void>;
}

export class StagingPool {
  readonly #free: SystemSharedMemoryRegion[] = [];
  readonly #all = new Set<SystemSharedMemoryRegion>();
  readonly #registrar: StagingRegistrar;
  readonly #prefix = `hloserve-client-${process.pid}-${randomBytes(4).toString('hex')}`;
  readonly #maxFree: number;
  readonly #root: string | undefined;
  #count = 0;
  #closed = false;

  constructor(registrar: StagingRegistrar, opts: { maxFreeRegions?: number; root?: string } = {}) {
    this.#registrar = registrar;
    this.#maxFree = opts.maxFreeRegions ?? 8;
    this.#root = opts.root;
  }

  async acquire(bytes: number): Promise<StagingLease> {
    if (this.#closed) throw new Error('the client is closed');
    const i = this.#free.findIndex((r) => r.byteSize >= bytes);
    let region: SystemSharedMemoryRegion;
    if (i >= 0) {
      region = this.#free.splice(i, 1)[0]!;
    } else {
      const size = Math.max(MIN_REGION_BYTES, 2 ** Math.ceil(Math.log2(bytes)));
      region = await SystemSharedMemoryRegion.create(`${this.#prefix}-${this.#count++}`, size, { root: this.#root });
      try {
        await this.#registrar.register(region);
      } catch (err) {
        await region.destroy();
        throw err;
      }
      this.#all.add(region);
    }
    let released = false;
    return {
      region,
      release: () => {
        if (released) return;
        released = true;
        if (this.#closed || this.#free.length >= this.#maxFree) void this.#drop(region);
        else this.#free.push(region);
      },
    };
  }

  async #drop(region: SystemSharedMemoryRegion): Promise<void> {
    this.#all.delete(region);
    await this.#registrar.unregister(region).catch(() => undefined);
    await region.destroy();
  }

  /** Unregisters and removes every region (leased ones too: the client is going away). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#free.length = 0;
    await Promise.all([...this.#all].map((r) => this.#drop(r)));
  }
}
