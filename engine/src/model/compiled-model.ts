import {
  BoundArguments,
  type DeviceBuffer,
  type Executable,
  type HostArray,
  isMlirBytecode,
  mayWaitOnClientPool,
  type ProgramSignature,
  Runtime,
} from '@hloserve/native';
import { DTYPE_BYTES, type DType } from '@hloserve/native/dtype';
import type { Manifest } from '../bundle/manifest.js';
import { ServeError } from '@hloserve/common/errors';
import type { HostTensor } from '../tensor.js';
import { callOnce, type ExecutableCache } from '../device/executable-cache.js';
import { RunRecord } from '../device/run-record.js';

/** A weight tensor's type, in the executable's argument order. */
export interface WeightSpec {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
}

/** A weight tensor in host memory. */
export interface WeightTensor extends WeightSpec {
  readonly data: Uint8Array;
}

/** What a model needs to be compiled: its manifest, one module per batch size, its weight types. */
export interface ModelSource {
  readonly name: string;
  readonly manifest: Manifest;
  /** Batch size (0 = any) -> StableHLO text or portable-artifact bytes. */
  readonly modules: ReadonlyMap<number, Uint8Array>;
  readonly weights: readonly WeightSpec[];
}

/** Copies host tensors into new buffers of `runtime` (device memory unless `memory` names another). */
export async function uploadTensors(
  runtime: Runtime,
  tensors: readonly WeightTensor[],
  memory?: string,
): Promise<DeviceBuffer[]> {
  // A few at a time, never on every addon thread: those run tasks in order, and a large model's
  // uploads issued all at once held every other model's executions behind them (Runtime.copyThreads).
  const slots = Runtime.copyThreads;
  const out = new Array<DeviceBuffer | undefined>(tensors.length);
  let next = 0;
  let failure: { reason: unknown } | null = null;
  const worker = async (): Promise<void> => {
    while (failure === null && next < tensors.length) {
      const i = next++;
      const w = tensors[i]!;
      try {
        out[i] = await runtime.upload({ dtype: w.dtype, shape: w.shape, data: w.data }, memory ? { memory } : {});
      } catch (reason) {
        failure ??= { reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(slots, tensors.length) }, worker));
  if (failure !== null) {
    for (const b of out) b?.dispose();
    throw (failure as { reason: unknown }).reason;
  }
  return out as DeviceBuffer[];
}

/** The signature `main` must have at batch size `batch`: inputs, then weights, then outputs. */
export function expectedSignature(src: ModelSource, batch: number): ProgramSignature {
  const m = src.manifest;
  return {
    parameters: [
      ...m.executableInputs.map((s) => ({ dtype: s.dtype, shape: s.wireShape(batch || undefined) })),
      ...src.weights.map((w) => ({ dtype: w.dtype, shape: w.shape })),
    ],
    results: m.executableOutputs.map((s) => ({ dtype: s.dtype, shape: s.wireShape(batch || undefined) })),
  };
}

/**
 * The batch a `model.mlir` (batch key 0) was compiled for. XLA compiles static shapes only ("unbounded
 * dynamism is disabled"), so a module written for "any batch" serves exactly the batch its `main`
 * declares: read from the first output with a batch axis (the plugin reports compiled output
 * shapes, text and bytecode alike), else from the first batched input of a text module's signature.
 * 0 when neither says; the model then keeps the any-batch key and the plugin judges each run.
 */
function declaredBatch(src: ModelSource, exe: Executable): number {
  const fromAxis = (axis: number | null, shape: readonly number[] | undefined): number => {
    const d = axis === null ? undefined : shape?.[axis];
    return d !== undefined && d > 0 ? d : 0;
  };
  for (const [i, s] of src.manifest.executableOutputs.entries()) {
    const b = fromAxis(s.wireBatchAxis, exe.outputs[i]?.shape);
    if (b) return b;
  }
  for (const [i, s] of src.manifest.executableInputs.entries()) {
    const b = fromAxis(s.wireBatchAxis, exe.signature?.parameters[i]?.shape);
    if (b) return b;
  }
  return 0;
}

/**
 * A model's executables, one per compiled batch size, sharing one set of weights. Executables are
 * compiled once at load; weights move to and from the device through the weight cache.
 */
export class CompiledModel {
  readonly name: string;
  readonly manifest: Manifest;
  readonly weights: readonly WeightSpec[];
  readonly #executables: ReadonlyMap<number, Executable>;
  #batchSizes: readonly number[] | undefined;
  /** Where runs are recorded (the compile cache), or null without one. */
  readonly #cache: ExecutableCache | null;
  /** Batch size -> the argument types a run passes (RunRecord.types). */
  readonly #types = new Map<number, string>();
  /** Cache-loaded size -> seconds of its recorded run, as the record stood when this version loaded. */
  readonly #recorded: ReadonlyMap<number, number>;
  /** The executables whose warmups may run beside other models' executions (ExecuteOptions.besideOthers). */
  readonly #besideOthers: ReadonlySet<Executable>;

  private constructor(
    src: ModelSource,
    executables: Map<number, Executable>,
    fromCache: ReadonlySet<number>,
    cache: ExecutableCache | null,
    besideOthers: ReadonlySet<Executable>,
  ) {
    this.name = src.name;
    this.#besideOthers = besideOthers;
    this.manifest = src.manifest;
    this.weights = src.weights;
    this.#executables = executables;
    this.#cache = cache;
    for (const b of executables.keys()) this.#types.set(b, RunRecord.types(expectedSignature(src, b).parameters));
    // Read once, as loaded: the runs of this version's own warmups are recorded as they end.
    const recorded = new Map<number, number>();
    for (const b of this.batchSizes) {
      const exe = executables.get(b)!;
      const s = fromCache.has(b) && cache ? cache.ranWith(exe, this.#types.get(b)!) : undefined;
      if (s !== undefined) recorded.set(b, s);
    }
    this.#recorded = recorded;
    const unproven = this.batchSizes.filter((b) => fromCache.has(b) && !recorded.has(b));
    this.warmBeforeServing = this.batchSizes.filter((b) => !fromCache.has(b) || b === unproven[0]);
  }

  /**
   * Compiles every module (through `cache` when given: an unchanged module loads from disk).
   * Bytecode modules are checked against the manifest's signature. `queued` is called once, when
   * every cache load and the first compile have been handed to the runtime's threads, and at the
   * latest before the promise settles.
   */
  static async compile(
    runtime: Runtime,
    src: ModelSource,
    signal?: AbortSignal,
    cache?: ExecutableCache | null,
    queued?: () => void,
  ): Promise<CompiledModel> {
    const once = callOnce(queued);
    try {
      return await CompiledModel.#compile(runtime, src, signal, cache, once);
    } finally {
      once();
    }
  }

  static async #compile(
    runtime: Runtime,
    src: ModelSource,
    signal: AbortSignal | undefined,
    cache: ExecutableCache | null | undefined,
    queued: () => void,
  ): Promise<CompiledModel> {
    const executables = new Map<number, Executable>();
    const fromCache = new Set<number>();
    const besideOthers = new Set<Executable>();
    const one = async (batch: number, code: Uint8Array, onQueued?: () => void): Promise<void> => {
      signal?.throwIfAborted();
      const signature = isMlirBytecode(code) ? expectedSignature(src, batch) : undefined;
      try {
        const options = signature ? { signature } : {};
        let pending: Promise<Executable>;
        if (cache) pending = cache.compile(runtime, code, options, onQueued);
        else {
          pending = runtime.compile(code, options);
          onQueued?.();
        }
        const exe = await pending;
        const key = batch || declaredBatch(src, exe);
        executables.set(key, exe);
        if (cache?.loadedFromDisk(exe)) fromCache.add(key);
        if (!mayWaitOnClientPool(code)) besideOthers.add(exe);
      } catch (err) {
        throw new ServeError(
          'HLO_ERR_BUNDLE_INVALID',
          `model '${src.name}': compiling ${batch ? `model.b${batch}.mlir` : 'model.mlir'} failed: ${(err as Error).message}`,
          { cause: err },
        );
      }
    };
    try {
      const modules = [...src.modules].sort((a, b) => a[0] - b[0]);
      // Modules the cache holds load side by side: each is a short deserialize queued on the
      // addon's threads, and queuing them all at once keeps those threads busy without a round
      // trip through a JS thread that a start keeps busy with imports. Compiles go one at a time:
      // they are CPU-heavy and parallel ones only fight for the same cores.
      const held = cache ? await Promise.all(modules.map(([, code]) => cache.holds(runtime, code))) : [];
      const toLoad = modules.filter((_, i) => held[i]);
      const toCompile = modules.filter((_, i) => !held[i]);
      // `queued` once every load is on its way and, when there are compiles, the first of them.
      let waiting = toLoad.length + (toCompile.length > 0 ? 1 : 0);
      const counted = (): (() => void) =>
        callOnce(() => {
          if (--waiting === 0) queued();
        });
      if (waiting === 0) queued();
      const firstCompile = toCompile.length > 0 ? counted() : undefined;
      const loads = await Promise.allSettled(toLoad.map(([b, code]) => one(b, code, counted())));
      const failed = loads.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) {
        firstCompile?.();
        throw failed.reason;
      }
      for (const [i, [batch, code]] of toCompile.entries()) await one(batch, code, i === 0 ? firstCompile : undefined);
    } catch (err) {
      for (const e of executables.values()) e.dispose();
      throw err;
    }
    return new CompiledModel(src, executables, fromCache, cache ?? null, besideOthers);
  }

  /**
   * The sizes to warm before the version serves: every size compiled now (its first run is the
   * proof it runs with these weights). Of those loaded from the compile cache (compiled and
   * written by an earlier start, checked by checksum and by the plugin's deserialize), the ones
   * the cache's run record says an earlier start ran with the argument types this version passes
   * (the manifest's inputs, these weights' dtypes and shapes) need no run first; if any other is
   * left, the smallest of those runs first, so one execute proves the weights and the loaded
   * executables together. Those first runs (resnet's ~30 ms, detector's ~20 ms) were a quiet warm
   * start's last ~60 ms (bench/RESULTS.md, session 17).
   */
  readonly warmBeforeServing: readonly number[];

  /** Seconds each cache-loaded size took when an earlier start ran it with these argument types (a copy). */
  get recordedCosts(): Map<number, number> {
    return new Map(this.#recorded);
  }

  /** The rest: cache-loaded sizes warmed after the version serves (their first-run costs off the start). */
  get warmAfterServing(): number[] {
    const before = new Set(this.warmBeforeServing);
    return this.batchSizes.filter((b) => !before.has(b));
  }

  /** Compiled batch sizes, ascending (0: a `model.mlir` whose batch its shapes do not say). */
  get batchSizes(): readonly number[] {
    // Asked for every model each time the console's feed samples: sorted once (the sizes are fixed).
    this.#batchSizes ??= Object.freeze([...this.#executables.keys()].sort((a, b) => a - b));
    return this.#batchSizes;
  }

  /** Runs the executable compiled for `batch` on inputs already shaped for it. */
  async run(
    batch: number,
    inputs: readonly HostTensor[],
    weights: readonly DeviceBuffer[],
    signal?: AbortSignal,
    background = false,
  ): Promise<HostTensor[]> {
    const exe = this.#executable(batch);
    const bound = boundWeights(weights);
    const out = await exe.run(
      this.#args(inputs),
      background
        ? { signal, background, bound, besideOthers: this.#besideOthers.has(exe) }
        : signal
          ? { signal, bound }
          : { bound },
    );
    return this.#named(out);
  }

  #executable(batch: number): Executable {
    const exe = this.#executables.get(batch) ?? this.#executables.get(0);
    if (!exe) throw new ServeError('HLO_ERR_INTERNAL', `model '${this.name}' has no executable for batch ${batch}`);
    return exe;
  }

  /** The inputs as host arrays; the weights follow them as bound arguments (boundWeights). */
  #args(inputs: readonly HostTensor[]): HostArray[] {
    const args = new Array<HostArray>(inputs.length);
    for (let i = 0; i < inputs.length; i++) {
      const t = inputs[i]!;
      if (t.dtype === 'BYTES') throw new ServeError('HLO_ERR_INTERNAL', `executable input '${t.name}' cannot be BYTES`);
      args[i] = { dtype: t.dtype, shape: t.shape, data: t.data };
    }
    return args;
  }

  #named(out: readonly HostArray[]): HostTensor[] {
    return out.map((o, i) => ({
      name: this.manifest.executableOutputs[i]?.name ?? `output_${i}`,
      dtype: o.dtype,
      shape: o.shape,
      data: o.data,
    }));
  }

  /**
   * run() on the calling thread (Executable.runInline): for the scheduler's inline batches. Null,
   * having run nothing, when the runtime runs one execution at a time and another is under way.
   */
  runInline(batch: number, inputs: readonly HostTensor[], weights: readonly DeviceBuffer[]): HostTensor[] | null {
    const exe = this.#executable(batch);
    const out = exe.runInline(this.#args(inputs), { bound: boundWeights(weights) });
    return out === null ? null : this.#named(out);
  }

  /**
   * Zero inputs at every size of `sizes` (default: every compiled size): proves each module runs with these weights, and times it.
   * On the addon's background threads, one size at a time, so a version warming beside one that
   * serves never holds the serving threads. On a client that runs one execution at a time, a
   * program that may wait on the client's pool (an FFT) warms in its turn on the serving threads;
   * any other runs beside the serving executions (a first run takes milliseconds).
   */
  async warmup(
    weights: readonly DeviceBuffer[],
    sizes: readonly number[] = this.batchSizes,
  ): Promise<Map<number, number>> {
    const seconds = new Map<number, number>();
    try {
      await this.#warmEach(weights, sizes, seconds);
    } finally {
      // The sizes that ran are recorded even when a later one failed.
      this.#cache?.recordRuns(
        [...seconds].map(([b, s]) => ({ exe: this.#executables.get(b)!, types: this.#types.get(b)!, seconds: s })),
      );
    }
    return seconds;
  }

  async #warmEach(
    weights: readonly DeviceBuffer[],
    sizes: readonly number[],
    seconds: Map<number, number>,
  ): Promise<void> {
    for (const batch of sizes) {
      const inputs = this.manifest.executableInputs.map((s) => {
        const shape = s.wireShape(batch || 1).map((d) => (d < 0 ? 1 : d));
        const bytes = shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[s.dtype];
        return { name: s.name, dtype: s.dtype, shape, data: new Uint8Array(bytes) };
      });
      const t = performance.now();
      await this.run(batch, inputs, weights, undefined, true);
      seconds.set(batch, (performance.now() - t) / 1e3);
    }
  }

  /** Frees the executables off the JS thread: a retired version must not stall the models serving. */
  dispose(): void {
    for (const e of this.#executables.values()) e.disposeInBackground();
  }
}

// One BoundArguments per resident weight set: the weight cache hands every lease of a set the
// same array, so the addon reads its buffers once per residency instead of once per execution.
const bound = new WeakMap<readonly DeviceBuffer[], BoundArguments>();

function boundWeights(weights: readonly DeviceBuffer[]): BoundArguments {
  let b = bound.get(weights);
  if (b === undefined) {
    b = new BoundArguments(weights);
    bound.set(weights, b);
  }
  return b;
}
