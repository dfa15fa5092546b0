import {
  binding,
  type NativeBuffer,
  type NativeClient,
  type NativeDeviceInfo,
  type NativeMemoryStats,
  type NativeOption,
  type NativePluginInfo,
} from './binding.js';
import { DeviceArena } from './device-arena.js';
import { DeviceBuffer } from './device-buffer.js';
import { ArgumentError, PluginLoadError } from './errors.js';
import { Executable } from './executable.js';
import { byteLanes, copyThreads, joinLanes } from './lanes.js';
import { type HostArray, nativeHostArray } from './host-array.js';
import { programSignature, type ProgramSignature } from './mlir-signature.js';
import { resolvePlugin } from './plugin.js';

export interface CudaOptions {
  /** Fraction of device memory for XLA's BFC pool (plugin default 0.75). */
  memoryFraction?: number;
  /** Grab the pool at client creation (plugin default true; ours false). */
  preallocate?: boolean;
  allocator?: 'default' | 'platform' | 'bfc' | 'cuda_async';
  visibleDevices?: number[];
}

export interface RuntimeOptions {
  /** 'cpu' (the pinned XLA CPU plugin), 'cuda', or a path to a PJRT plugin. Default 'cpu'. */
  plugin?: string;
  /** CPU plugin: how many devices to create (the plugin's own default is 4). Default 1. */
  cpuDeviceCount?: number;
  /**
   * CPU plugin: hand each execution to the client's own thread pool (true, the plugin's default
   * and this wrapper's) or run it on the thread that launches it (false, the worker's default:
   * global.runtime.cpu_asynchronous). false saves two thread wake-ups per execution. With false the addon runs this
   * client's executions one at a time (as the asynchronous client orders them itself): the
   * plugin's FFT waits on its Eigen pool from inside that pool, and concurrent synchronous
   * executions of an FFT program stopped the client for good (bench/RESULTS.md, session 14). A
   * background execution (a warmup) then runs on the serving threads, so that it never holds the
   * others back from a lowered thread, unless it says `besideOthers` (a program that never waits
   * on the pool: it runs beside them); runInline answers null while another execution runs.
   */
  cpuAsynchronous?: boolean;
  cuda?: CudaOptions;
  /** Further create options passed through verbatim (the plugin rejects unknown names). */
  extraOptions?: NativeOption[];
}

export interface CompileOptions {
  /** The program's parameter/result types, for bytecode programs whose signature we cannot read. */
  signature?: ProgramSignature;
  signal?: AbortSignal;
}

export interface CompileIdentity {
  readonly pluginPath: string;
  readonly apiVersion: readonly [number, number];
  readonly attributes: Readonly<Record<string, string | number | number[] | boolean>>;
  /** The client's platform name and version. */
  readonly platform: string;
  /** The serialized CompileOptionsProto, hex. */
  readonly compileOptions: string;
  readonly deviceKind: string;
}

export type DeviceInfo = NativeDeviceInfo;
export type MemoryStats = NativeMemoryStats;
export type PluginInfo = NativePluginInfo;

function isCudaPlugin(info: NativePluginInfo): boolean {
  return 'cuda_version' in info.attributes;
}

function createOptions(info: NativePluginInfo, o: RuntimeOptions): NativeOption[] {
  const out: NativeOption[] = [];
  if (isCudaPlugin(info)) {
    const c = o.cuda ?? {};
    out.push({ name: 'platform_name', kind: 'string', value: 'cuda' });
    out.push({ name: 'allocator', kind: 'string', value: c.allocator ?? 'bfc' });
    out.push({ name: 'preallocate', kind: 'bool', value: c.preallocate ?? false });
    out.push({ name: 'memory_fraction', kind: 'float', value: c.memoryFraction ?? 0.9 });
    if (c.visibleDevices) out.push({ name: 'visible_devices', kind: 'int64list', value: c.visibleDevices });
  } else if (info.path.includes('cpu')) {
    const n = o.cpuDeviceCount ?? 1;
    if (!Number.isInteger(n) || n < 1) throw new ArgumentError('cpuDeviceCount must be a positive integer');
    out.push({ name: 'cpu_device_count', kind: 'int64', value: n });
    out.push({ name: 'asynchronous', kind: 'bool', value: o.cpuAsynchronous ?? true });
  }
  return [...out, ...(o.extraOptions ?? [])];
}

/** Plugin loads started by Runtime.preload, by resolved path; create() takes its own out. */
const preloads = new Map<string, Promise<NativePluginInfo>>();

/**
 * One PJRT client on one plugin: the entry point for compile, upload and memory queries.
 * Everything it creates is freed by dispose(), or individually by each object's dispose().
 */
export class Runtime {
  readonly plugin: PluginInfo;
  readonly platformName: string;
  readonly platformVersion: string;
  readonly devices: readonly DeviceInfo[];
  readonly #client: NativeClient;

  private constructor(client: NativeClient, plugin: PluginInfo) {
    this.#client = client;
    this.plugin = plugin;
    this.platformName = client.platformName();
    this.platformVersion = client.platformVersion();
    this.devices = client.devices();
  }

  /**
   * Starts loading a plugin on the addon's threads, so that a later create() for it finds the load
   * under way or done: a CLI calls it as soon as its configuration names the plugin, before it
   * imports the rest of the server. Errors are create()'s to report; this never throws.
   */
  static preload(plugin: string = 'cpu'): void {
    try {
      const path = resolvePlugin(plugin);
      if (preloads.has(path)) return;
      process.env.TF_CPP_MIN_LOG_LEVEL ??= '1';
      const loading = binding().loadPluginAsync(path);
      loading.catch(() => undefined);
      preloads.set(path, loading);
    } catch {
      // create() resolves the plugin again and says what is wrong.
    }
  }

  /** Loads the plugin (once per process) and creates a client. Nothing is downloaded here. */
  static async create(options: RuntimeOptions = {}): Promise<Runtime> {
    const path = resolvePlugin(options.plugin ?? 'cpu');
    // XLA logs every INFO line to stderr unless told otherwise; errors still come back as statuses.
    process.env.TF_CPP_MIN_LOG_LEVEL ??= '1';
    const b = binding();
    let info: NativePluginInfo;
    const preloaded = preloads.get(path);
    preloads.delete(path);
    try {
      // Off the JS thread: a plugin's dlopen is tens of ms that a start can spend on other work.
      info = await (preloaded ?? b.loadPluginAsync(path));
    } catch (err) {
      throw new PluginLoadError(`cannot load PJRT plugin ${path}: ${(err as Error).message}`, { cause: err });
    }
    const client = await b.createClient(path, createOptions(info, options));
    return new Runtime(client, info);
  }

  /**
   * The CPU priority of the addon's background threads, which run every compile, deserialize and
   * serialize and warmup executions: 'idle', 'nice' or 'normal' (see HLOSERVE_BACKGROUND_PRIORITY).
   */
  static get backgroundPriority(): 'idle' | 'nice' | 'normal' {
    return binding().backgroundPriority;
  }

  /** How many weight copies may run at once (copyTo's lanes, uploads of one model): see copyThreads. */
  static get copyThreads(): number {
    return copyThreads(binding().workerThreads);
  }

  /**
   * While a build runs on the lowered background threads, each CPU is woken this often (µs) by a
   * thread that sleeps again at once, so a serving thread woken behind a SCHED_IDLE compile thread
   * runs within that time instead of at the next scheduler tick (up to 4 ms): 100 where builds are
   * confined (two CPUs or more), 500 on one CPU. 0: off (HLOSERVE_BUILD_NUDGE_US=0, or background
   * priority 'normal').
   */
  static get buildNudgeMicros(): number {
    return binding().buildNudgeMicros;
  }

  /** Nudges so far (see buildNudgeMicros). */
  static buildNudges(): number {
    return binding().buildNudges();
  }

  /**
   * While a build overlaps serving work, the process's SCHED_IDLE threads (the build and XLA's
   * compile helpers) are held off this CPU, which then takes no nudges: a serving thread there never
   * waits behind a build. -1: off (HLOSERVE_BUILD_CONFINE=0, a single CPU, nudging off, or builds
   * not at 'idle').
   */
  static get buildServingCpu(): number {
    return binding().buildServingCpu;
  }

  /**
   * Whether confinement is two-way: while a build overlaps serving work the build's threads keep
   * the process's last CPU and its normal-policy threads (the JS thread, the serving pools, the
   * PJRT client's threads, hook threads) the rest, so no serving thread can wake behind a build
   * and no CPU is nudged. Opt-in (HLOSERVE_BUILD_CONFINE_SERVING=1); false: the builds alone leave
   * buildServingCpu, or no confinement.
   */
  static get buildConfinesServing(): boolean {
    return binding().buildConfinesServing;
  }

  /** Times builds were confined so far (see buildServingCpu). */
  static buildConfinements(): number {
    return binding().buildConfinements();
  }

  /**
   * The mmap threshold the addon fixed for glibc's malloc (bytes; 0: left to the libc or to the
   * operator's MALLOC_MMAP_THRESHOLD_). Fixed at glibc's ceiling, an execution's multi-MiB scratch
   * comes from the heap instead of being mapped and faulted in on every run; while a model build
   * runs on the background threads it drops to 1 MiB, so a compile's blocks do not fragment the heap.
   */
  static get mallocMmapThreshold(): number {
    return binding().mallocMmapThreshold;
  }

  /**
   * The mmap threshold in force now: mallocMmapThreshold, or 1 MiB while a build (compile,
   * deserialize, serialize) runs. A background execution (a warmup) leaves it at the serving value.
   */
  static mallocMmapThresholdNow(): number {
    return binding().mallocMmapThresholdNow();
  }

  get disposed(): boolean {
    return this.#client.isDisposed();
  }

  /** Allocator statistics of a device; null where the plugin keeps none (the CPU plugin). */
  memoryStats(device = 0): MemoryStats | null {
    this.#checkDevice(device);
    return this.#client.memoryStats(device);
  }

  /** Buffers and executables alive in this client, and the bytes the buffers occupy. */
  ledger(): { liveBuffers: number; liveBufferBytes: number; liveExecutables: number } {
    return this.#client.ledger();
  }

  /** Memory spaces of a device by kind ('device', 'pinned_host', 'unpinned_host'). */
  memoryKinds(device = 0): string[] {
    this.#checkDevice(device);
    return this.devices[device]!.memories.map((m) => m.kind);
  }

  /**
   * Compiles StableHLO (text or a portable-artifact bytecode) off the JS thread. The plugin reads
   * `code` where it is, not a copy: leave its bytes unchanged until the promise settles.
   */
  async compile(code: Uint8Array | string, options: CompileOptions = {}): Promise<Executable> {
    options.signal?.throwIfAborted();
    let bytes: Uint8Array;
    if (typeof code === 'string') bytes = Buffer.from(code, 'utf8');
    else if (code instanceof Uint8Array) bytes = code;
    else throw new ArgumentError('code must be a string or a Uint8Array');
    if (bytes.byteLength === 0) throw new ArgumentError('code is empty');
    const signature = options.signature ?? programSignature(bytes);
    const native = await this.#client.compile(bytes);
    return new Executable(native, signature, this.#memoryIndex, this.devices.length);
  }

  /**
   * Loads an executable that Executable.serialize() produced on this plugin build, off the JS
   * thread. The plugin reads the bytes as its own compiled code and trusts them: hand it only bytes
   * whose integrity was checked (ExecutableCache keeps a checksum). Garbage is refused with a
   * PjrtError where the plugin notices, never by this check. `signature` is the program's, as for
   * compile() (serialized bytes do not carry one that we can read). As with compile(), the bytes are
   * read where they are: leave them unchanged until the promise settles.
   */
  async deserializeAndLoad(serialized: Uint8Array, options: CompileOptions = {}): Promise<Executable> {
    options.signal?.throwIfAborted();
    if (!(serialized instanceof Uint8Array)) throw new ArgumentError('serialized must be a Uint8Array');
    if (serialized.byteLength === 0) throw new ArgumentError('serialized is empty');
    const native = await this.#client.deserializeAndLoad(serialized);
    return new Executable(native, options.signature ?? null, this.#memoryIndex, this.devices.length);
  }

  /**
   * What, besides the program, decides the compiled code: the plugin build, the PJRT API, the
   * compile options and the device kind. Executables compiled under one identity are only loaded
   * under the same one (ExecutableCache's key).
   */
  get compileIdentity(): CompileIdentity {
    return {
      pluginPath: this.plugin.path,
      apiVersion: this.plugin.apiVersion,
      attributes: this.plugin.attributes,
      platform: `${this.platformName} ${this.platformVersion}`,
      compileOptions: binding().compileOptions.toString('hex'),
      deviceKind: this.devices[0]?.kind ?? '',
    };
  }

  /** Copies host data into a new buffer in `memory` ('device' by default) of `device`. */
  async upload(array: HostArray, options: { device?: number; memory?: string } = {}): Promise<DeviceBuffer> {
    const a = nativeHostArray(array, 'array');
    const device = options.device ?? 0;
    this.#checkDevice(device);
    const mem = options.memory === undefined ? -1 : this.#memoryIndex(device, options.memory);
    const native = await this.#client.upload(a, device, mem);
    return new DeviceBuffer(native, this.#memoryIndex);
  }

  /**
   * Copies buffers of one device into another of its memory spaces in a few native calls (lanes,
   * see copyLanes) instead of one per buffer: a model's weights cost a thread hop or a few, not one
   * per tensor. On failure no copy survives.
   */
  async copyTo(buffers: readonly DeviceBuffer[], memoryKind: string): Promise<DeviceBuffer[]> {
    if (!Array.isArray(buffers)) throw new ArgumentError('buffers must be an array of DeviceBuffer');
    if (buffers.length === 0) return [];
    const natives = buffers.map((b, i) => {
      if (!(b instanceof DeviceBuffer)) throw new ArgumentError(`buffers[${i}] must be a DeviceBuffer`);
      if (b.device !== buffers[0]!.device) throw new ArgumentError('buffers must all live on one device');
      return b.native;
    });
    const index = this.#memoryIndex(buffers[0]!.device, memoryKind);
    const lanes = copyLanes(buffers, Runtime.copyThreads);
    return joinLanes(
      lanes,
      lanes.map((lane) => this.#copyLane(lane, natives, index)),
      this.#memoryIndex,
    );
  }

  async #copyLane(lane: readonly number[], natives: readonly NativeBuffer[], index: number): Promise<NativeBuffer[]> {
    try {
      return await this.#client.copyBuffers(
        lane.map((i) => natives[i]!),
        index,
      );
    } catch (e) {
      // The addon refuses a buffer of another client with a TypeError; keep the typed error.
      if (e instanceof TypeError && !(e instanceof ArgumentError)) throw new ArgumentError(e.message);
      throw e;
    }
  }

  /**
   * True where device memory is host memory (the CPU plugin): only there can the addon own device
   * memory itself (createArena).
   */
  get hostAddressableDevice(): boolean {
    return this.platformName === 'cpu';
  }

  /**
   * A device arena (see DeviceArena) of at most `limitBytes`, mapped `chunkBytes` at a time (default:
   * all of it at the first placement when the limit is at most 256 MiB, else 64 MiB chunks). Only
   * where hostAddressableDevice holds.
   */
  createArena(options: { limitBytes: number; chunkBytes?: number; device?: number }): DeviceArena {
    const device = options.device ?? 0;
    this.#checkDevice(device);
    const { limitBytes } = options;
    if (!Number.isSafeInteger(limitBytes) || limitBytes < 0)
      throw new ArgumentError('limitBytes must be a non-negative integer');
    const chunkBytes = options.chunkBytes ?? (limitBytes <= 256 * MIB ? Math.max(limitBytes, 1) : 64 * MIB);
    if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1)
      throw new ArgumentError('chunkBytes must be a positive integer');
    if (!this.hostAddressableDevice) {
      throw new ArgumentError(`a device arena needs host-addressable device memory; '${this.platformName}' has none`);
    }
    const native = this.#client.createArena(device, this.#memoryIndex(device, 'device'), limitBytes, chunkBytes);
    return new DeviceArena(native, device, this.#memoryIndex, Runtime.copyThreads);
  }

  /**
   * Disposes `buffers` now (as dispose() does), but destroys them on one addon thread: their memory
   * returns a little later, off the calling thread. Where that memory is host memory (the CPU
   * plugin unmaps large buffers, 5-10 us each), a weight cache evicting a many-tensor model saves
   * that time on the JS thread; on an accelerator, where the next upload may need the memory at
   * once, dispose() is the safer choice.
   */
  disposeInBackground(buffers: readonly DeviceBuffer[]): void {
    for (const b of buffers) if (!(b instanceof DeviceBuffer)) throw new ArgumentError('buffers must be DeviceBuffers');
    this.#client.disposeInBackground(buffers.map((b) => b.native));
    for (const b of buffers) b.markDisposed();
  }

  /** Frees every buffer and executable of this client, then the client (once in-flight work ends). */
  dispose(): void {
    this.#client.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.dispose();
  }

  #checkDevice(device: number): void {
    if (!Number.isInteger(device) || device < 0 || device >= this.devices.length) {
      throw new ArgumentError(`device ${device} is out of range (0..${this.devices.length - 1})`);
    }
  }

  readonly #memoryIndex = (device: number, kind: string): number => {
    this.#checkDevice(device);
    const m = this.devices[device]!.memories.find((x) => x.kind === kind);
    if (!m) {
      const have = this.devices[device]!.memories.map((x) => x.kind).join(', ');
      throw new ArgumentError(`device ${device} has no '${kind}' memory (it has: ${have})`);
    }
    return m.index;
  };
}

const MIB = 1 << 20;

/** copyTo's lanes: indices of `buffers`, split by their bytes (see byteLanes). */
export function copyLanes(buffers: readonly { readonly onDeviceBytes: number }[], threads: number): number[][] {
  return byteLanes(
    buffers.map((b) => b.onDeviceBytes),
    threads,
  );
}
