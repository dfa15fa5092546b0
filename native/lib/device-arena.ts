import type { NativeArena, NativeArenaStats, NativeHostArray } from './binding.js';
import type { DeviceBuffer, MemoryResolver } from './device-buffer.js';
import { ArgumentError } from './errors.js';
import { type HostArray, nativeHostArray } from './host-array.js';
import { byteLanes, joinLanes } from './lanes.js';

export type ArenaStats = Readonly<NativeArenaStats>;

/**
 * Device memory the addon maps once and reuses, on devices whose memory is host memory (the CPU
 * plugin): place() copies arrays into free ranges and returns buffers that view them, and a range
 * is free again once its buffer is disposed and no execution uses it. A load is then one memcpy,
 * with none of the allocation and first-touch page faults of a fresh device buffer (see
 * Runtime.createArena).
 */
export class DeviceArena {
  readonly device: number;
  readonly #native: NativeArena;
  readonly #memories: MemoryResolver;
  readonly #threads: number;
  #disposed = false;

  /** @internal created by Runtime.createArena. */
  constructor(native: NativeArena, device: number, memories: MemoryResolver, threads: number) {
    this.#native = native;
    this.device = device;
    this.#memories = memories;
    this.#threads = threads;
  }

  /**
   * Copies `arrays` into the arena, one buffer each, or returns null (having reserved and copied
   * nothing) when they do not fit under the limit. Large sets are split into lanes over the
   * addon's threads, like Runtime.copyTo.
   */
  async place(arrays: readonly HostArray[]): Promise<DeviceBuffer[] | null> {
    this.#live();
    const natives = this.#natives(arrays);
    if (natives.length === 0) return [];
    // A view is exactly the array it was made from, in this device's default memory.
    const facts = arrays.map((a) => ({
      dtype: a.dtype,
      shape: [...a.shape],
      onDeviceBytes: a.data.byteLength,
      memoryKind: 'device',
      device: this.device,
    }));
    const lanes = this.#lanes(natives);
    const pending = this.#native.place(natives, lanes);
    return pending === null ? null : joinLanes(lanes, pending, this.#memories, facts);
  }

  /**
   * Copies `arrays` over buffers this arena placed before, of the same dtype and shape, and
   * returns them: a load that reuses an evicted model's views makes no new buffers at all.
   * Nothing may read the buffers meanwhile; PJRT does not see this write.
   */
  async refill(buffers: readonly DeviceBuffer[], arrays: readonly HostArray[]): Promise<readonly DeviceBuffer[]> {
    this.#live();
    if (buffers.length !== arrays.length) throw new ArgumentError('refill needs as many arrays as buffers');
    const natives = this.#natives(arrays);
    let pending: Promise<void>[];
    try {
      pending = this.#native.refill(
        buffers.map((b) => b.native),
        natives,
        this.#lanes(natives),
      );
    } catch (e) {
      // The addon refuses foreign buffers and mismatched shapes with a TypeError; keep the typed error.
      if (e instanceof TypeError && !(e instanceof ArgumentError)) throw new ArgumentError(e.message);
      throw e;
    }
    await Promise.all(pending);
    return buffers;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  stats(): ArenaStats {
    return this.#native.stats();
  }

  /** Changes how much memory the arena may map; a lower limit unmaps empty chunks above it. */
  setLimit(bytes: number): void {
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new ArgumentError('limit must be a non-negative integer');
    this.#native.setLimit(bytes);
  }

  #live(): void {
    if (this.#disposed) throw new ArgumentError('the arena has been disposed');
  }

  #natives(arrays: readonly HostArray[]): NativeHostArray[] {
    if (!Array.isArray(arrays)) throw new ArgumentError('arrays must be an array of host arrays');
    return arrays.map((a, i) => nativeHostArray(a, `arrays[${i}]`));
  }

  #lanes(natives: readonly NativeHostArray[]): number[][] {
    return byteLanes(
      natives.map((n) => n.data.byteLength),
      this.#threads,
    );
  }

  /** Drops the arena; its memory is unmapped once the buffers placed in it are disposed too. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#native.dispose();
  }
}
