/**
 * Host buffers that coalesced batches are gathered into, kept for the next dispatch of the same
 * size. A fresh 100 kB buffer per dispatch cost 18 us to allocate and fill against 4 us for one
 * reused (mlp at batch 32, bench/RESULTS.md session 6), and every fresh one was external memory
 * that V8 had to collect.
 *
 * Only for executors that are done with their inputs once execute() settles (Executor.releasesInputs):
 * a buffer goes back to the pool when its execution has returned, never while the device may read it.
 */
export class BatchBufferPool {
  readonly #idle = new Map<number, Buffer[]>();
  #idleBytes = 0;
  readonly #maxIdleBytes: number;
  readonly #maxPerSize: number;

  /**
   * `maxIdleBytes` bounds what the pool holds while nothing runs (many models with distinct batch
   * shapes must not pin memory); `maxPerSize` is how many buffers of one size are worth keeping,
   * about the dispatches that can be in flight at once plus one.
   */
  constructor(maxIdleBytes: number, maxPerSize: number) {
    this.#maxIdleBytes = maxIdleBytes;
    this.#maxPerSize = maxPerSize;
  }

  /** A buffer of exactly `bytes` bytes, contents undefined (the caller writes every byte). */
  take(bytes: number): Buffer {
    const list = this.#idle.get(bytes);
    const b = list?.pop();
    if (b === undefined) return Buffer.allocUnsafe(bytes);
    this.#idleBytes -= bytes;
    return b;
  }

  /** Returns a buffer from take(); kept when the bounds allow, else left to the collector. */
  give(b: Buffer): void {
    const bytes = b.byteLength;
    if (this.#idleBytes + bytes > this.#maxIdleBytes) return;
    let list = this.#idle.get(bytes);
    if (list === undefined) this.#idle.set(bytes, (list = []));
    if (list.length >= this.#maxPerSize) return;
    list.push(b);
    this.#idleBytes += bytes;
  }

  get idleBytes(): number {
    return this.#idleBytes;
  }

  /** Drops everything held (a model removed, a shutdown). */
  clear(): void {
    this.#idle.clear();
    this.#idleBytes = 0;
  }
}
