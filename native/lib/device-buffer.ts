import type { NativeBuffer } from './binding.js';
import { dtypeFromPjrt, type DType } from './dtype.js';
import { ArgumentError } from './errors.js';
import { byteLengthOf, type HostArray } from './host-array.js';

/** Memory spaces of a device that copyTo() can target ('device', 'pinned_host', 'unpinned_host'). */
export type MemoryResolver = (device: number, kind: string) => number;

/** What describe() reports of a buffer, when its creator already knows it. */
export interface BufferFacts {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly onDeviceBytes: number;
  readonly memoryKind: string;
  readonly device: number;
}

/** A buffer owned by the runtime (device memory or one of its host memory spaces). */
export class DeviceBuffer {
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** Bytes the buffer occupies where it lives (may exceed the logical size on some devices). */
  readonly onDeviceBytes: number;
  readonly memoryKind: string;
  readonly device: number;
  readonly #native: NativeBuffer;
  readonly #memories: MemoryResolver;
  #disposed = false;

  /**
   * @internal created by Runtime.upload, Executable.runToDevice, copyTo and DeviceArena.place.
   * `facts` spares the native describe() call (about 4 us a buffer) where the creator made the
   * buffer to a known description, as an arena does.
   */
  constructor(native: NativeBuffer, memories: MemoryResolver, facts?: BufferFacts) {
    this.#native = native;
    this.#memories = memories;
    if (facts !== undefined) {
      this.dtype = facts.dtype;
      this.shape = facts.shape;
      this.onDeviceBytes = facts.onDeviceBytes;
      this.memoryKind = facts.memoryKind;
      this.device = facts.device;
      return;
    }
    const d = native.describe();
    const dtype = dtypeFromPjrt(d.type);
    if (!dtype) throw new ArgumentError(`buffer has unsupported PJRT element type ${d.type}`);
    this.dtype = dtype;
    this.shape = d.dims;
    this.onDeviceBytes = d.onDeviceBytes;
    this.memoryKind = d.memoryKind;
    this.device = d.deviceIndex;
  }

  /** @internal */
  get native(): NativeBuffer {
    return this.#native;
  }

  get byteLength(): number {
    return byteLengthOf(this.dtype, this.shape);
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /** Copies the contents to host memory: into `into` when given (exact size), else a new buffer. */
  async toHost(into?: Uint8Array): Promise<HostArray> {
    if (into !== undefined) {
      if (!(into instanceof Uint8Array)) throw new ArgumentError('toHost(into): into must be a Uint8Array');
      await this.#native.toHost(into);
      return { dtype: this.dtype, shape: this.shape, data: into };
    }
    const data = (await this.#native.toHost()) as Buffer;
    return { dtype: this.dtype, shape: this.shape, data };
  }

  /** Copies the buffer into another memory space of its device; the result is a new buffer. */
  async copyTo(memoryKind: string): Promise<DeviceBuffer> {
    const index = this.#memories(this.device, memoryKind);
    return new DeviceBuffer(await this.#native.copyToMemory(index), this.#memories);
  }

  dispose(): void {
    this.#disposed = true;
    this.#native.dispose();
  }

  /** @internal Runtime.disposeInBackground freed the native buffer. */
  markDisposed(): void {
    this.#disposed = true;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
