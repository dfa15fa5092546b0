import type {
  NativeBoundArguments,
  NativeBuffer,
  NativeCompiledMemoryStats,
  NativeExecutable,
  NativeHostArray,
} from './binding.js';
import type { BoundArguments } from './bound-arguments.js';
import { DeviceBuffer, type MemoryResolver } from './device-buffer.js';
import { dtypeFromPjrt } from './dtype.js';
import { abortError, ArgumentError } from './errors.js';
import { type HostArray, nativeHostArray } from './host-array.js';
import type { ProgramSignature, TensorType } from './mlir-signature.js';

export type ExecuteArg = DeviceBuffer | HostArray;

export interface ExecuteOptions {
  device?: number;
  signal?: AbortSignal;
  /**
   * Run on the addon's background threads (lowered CPU priority) instead of the serving ones: for
   * work nobody waits on, such as a new version's warmup while the current one serves.
   */
  background?: boolean;
  /**
   * With `background`: the program never waits on the client's pool from inside it
   * (`mayWaitOnClientPool` says no), so on a client that runs one execution at a time
   * (`cpuAsynchronous: false`) it runs beside the others on the background threads instead of
   * taking its turn on the serving ones. Its first run then holds no other model's execution back.
   */
  besideOthers?: boolean;
  /** Arguments that follow `args`, read by the addon once (BoundArguments): a model's weights. */
  bound?: BoundArguments;
}

type Prepared = [Array<NativeBuffer | NativeHostArray>, number, NativeBoundArguments | undefined];

const BACKGROUND = { background: true } as const;
const BACKGROUND_BESIDE = { background: true, besideOthers: true } as const;

function laneOf(options: ExecuteOptions): { background: boolean; besideOthers?: boolean } | undefined {
  if (!options.background) return undefined;
  return options.besideOthers ? BACKGROUND_BESIDE : BACKGROUND;
}

function shapeMatches(expected: readonly number[], got: readonly number[]): boolean {
  return expected.length === got.length && expected.every((d, i) => d === -1 || d === got[i]);
}

function fmt(t: { dtype: string; shape: readonly number[] }): string {
  return `${t.dtype}[${t.shape.join(',')}]`;
}

/** A compiled program. run() takes device buffers and/or host arrays and returns host arrays. */
export class Executable {
  /** Parameter and result types when known (parsed from text, or given at compile time). */
  readonly signature: ProgramSignature | null;
  readonly outputs: readonly TensorType[];
  readonly memoryStats: NativeCompiledMemoryStats | null;
  readonly #native: NativeExecutable;
  readonly #memories: MemoryResolver;
  readonly #deviceCount: number;
  /** Bound arguments whose types were checked against the signature (they never change). */
  readonly #checkedBound = new WeakSet<BoundArguments>();
  #disposed = false;

  /** @internal created by Runtime.compile */
  constructor(
    native: NativeExecutable,
    signature: ProgramSignature | null,
    memories: MemoryResolver,
    deviceCount: number,
  ) {
    const d = native.describe();
    this.#native = native;
    this.#memories = memories;
    this.#deviceCount = deviceCount;
    this.outputs = d.outputTypes.map((t, i) => ({ dtype: dtypeFromPjrt(t) ?? 'u8', shape: d.outputDims[i] ?? [] }));
    this.memoryStats = d.memoryStats;
    this.signature = signature;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  /** Executes and downloads every output. Never blocks the event loop. */
  async run(args: readonly ExecuteArg[], options: ExecuteOptions = {}): Promise<HostArray[]> {
    const [nativeArgs, device, bound] = this.#prepare(args, options);
    const lane = laneOf(options);
    const pending = this.#native.execute(nativeArgs, device, true, lane, bound);
    const out = await this.#race(pending, options.signal);
    return out.map((o) => ({ dtype: dtypeFromPjrt(o.type) ?? 'u8', shape: o.dims, data: o.data }));
  }

  /**
   * Executes on the calling thread and downloads every output: it blocks the event loop for the
   * whole execution. Only for programs shorter than the two thread hops around run() (a task-pool
   * wake-up, then the event loop's wake-up for the completion): a single caller's cheap model on
   * the CPU plugin. A run that may hang or take long belongs on run().
   *
   * Null, having run nothing, when the runtime was created with `cpuAsynchronous: false` and
   * another execution of it is under way (a warmup on another thread): that client runs one
   * execution at a time (see RuntimeOptions.cpuAsynchronous), and waiting here would hold the
   * event loop for the other one's length. Use run() then.
   */
  runInline(args: readonly ExecuteArg[], options: Pick<ExecuteOptions, 'device' | 'bound'> = {}): HostArray[] | null {
    const [nativeArgs, device, bound] = this.#prepare(args, options);
    const out = this.#native.executeInline(nativeArgs, device, true, bound);
    return out === null
      ? null
      : out.map((o) => ({ dtype: dtypeFromPjrt(o.type) ?? 'u8', shape: o.dims, data: o.data }));
  }

  /** Executes and leaves the outputs on the device. */
  async runToDevice(args: readonly ExecuteArg[], options: ExecuteOptions = {}): Promise<DeviceBuffer[]> {
    const [nativeArgs, device, bound] = this.#prepare(args, options);
    const lane = laneOf(options);
    const pending = this.#native.execute(nativeArgs, device, false, lane, bound);
    const out = await this.#race(pending, options.signal);
    return out.map((b) => new DeviceBuffer(b, this.#memories));
  }

  /**
   * The plugin's serialization of this compiled program, for Runtime.deserializeAndLoad on the same
   * plugin build (it is not portable across plugin versions). Runs off the JS thread.
   */
  async serialize(): Promise<Uint8Array> {
    return this.#native.serialize();
  }

  dispose(): void {
    this.#disposed = true;
    this.#native.dispose();
  }

  /**
   * Disposed at once, as dispose() is, but the compiled code is freed on a background thread
   * (about 0.4 ms an executable on the CPU plugin) instead of the calling one: for retiring a
   * model version while other models serve. The ledger counts it until then.
   */
  disposeInBackground(): void {
    this.#disposed = true;
    this.#native.disposeInBackground();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  #prepare(args: readonly ExecuteArg[], options: ExecuteOptions): Prepared {
    options.signal?.throwIfAborted();
    const device = options.device ?? 0;
    if (!Number.isInteger(device) || device < 0 || device >= this.#deviceCount) {
      throw new ArgumentError(`device ${device} is out of range (0..${this.#deviceCount - 1})`);
    }
    if (!Array.isArray(args)) throw new ArgumentError('args must be an array');
    const bound = options.bound;
    const params = this.signature?.parameters;
    const count = args.length + (bound?.buffers.length ?? 0);
    if (params && count !== params.length) {
      throw new ArgumentError(`expected ${params.length} arguments, got ${count}`);
    }
    const out: Array<NativeBuffer | NativeHostArray> = [];
    for (let i = 0; i < args.length; i++) out.push(this.#arg(args[i]!, i, device, params?.[i]));
    if (bound === undefined) return [out, device, undefined];
    if (bound.buffers.length > 0 && bound.device !== device) {
      throw new ArgumentError(`the bound arguments live on device ${bound.device}, not ${device}`);
    }
    if (params && !this.#checkedBound.has(bound)) {
      bound.buffers.forEach((b, k) => this.#check(b, args.length + k, params[args.length + k]));
      this.#checkedBound.add(bound);
    }
    return [out, device, bound.native];
  }

  #arg(a: ExecuteArg, i: number, device: number, want: TensorType | undefined): NativeBuffer | NativeHostArray {
    let native: NativeBuffer | NativeHostArray;
    if (a instanceof DeviceBuffer) {
      if (a.device !== device) throw new ArgumentError(`args[${i}] lives on device ${a.device}, not ${device}`);
      native = a.native;
    } else {
      native = nativeHostArray(a, `args[${i}]`);
    }
    this.#check(a, i, want);
    return native;
  }

  // The message's field name is built only for an error: this runs for every argument of every run.
  #check(got: { dtype: string; shape: readonly number[] }, i: number, want: TensorType | undefined): void {
    if (want && (want.dtype !== got.dtype || !shapeMatches(want.shape, got.shape))) {
      throw new ArgumentError(`args[${i}]: expected ${fmt(want)}, got ${fmt(got)}`);
    }
  }

  // An abort releases the caller at once; the device work finishes in the background and its
  // results are dropped (PJRT cannot cancel a launched execution).
  async #race<T>(pending: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    if (!signal) return pending;
    signal.throwIfAborted();
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(abortError(signal));
      signal.addEventListener('abort', onAbort, { once: true });
      pending.then(
        (v) => {
          signal.removeEventListener('abort', onAbort);
          resolve(v);
        },
        (e: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });
  }
}
