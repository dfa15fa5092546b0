/**
 * The exact shape of the compiled addon's exports. This is the only file that loads the .node
 * binary; everything else goes through the typed wrappers.
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DisposedError, PjrtError, PluginLoadError } from './errors.js';

export interface NativeHostArray {
  data: ArrayBufferView;
  type: number;
  dims: number[];
}

export interface NativeHostResult {
  data: Buffer;
  type: number;
  dims: number[];
}

export interface NativeMemoryInfo {
  index: number;
  id: number;
  kind: string;
  isDefault: boolean;
}

export interface NativeDeviceInfo {
  index: number;
  id: number;
  localHardwareId: number;
  kind: string;
  debugString: string;
  memories: NativeMemoryInfo[];
}

export interface NativeMemoryStats {
  bytesInUse: number;
  peakBytesInUse: number | null;
  numAllocs: number | null;
  largestAllocSize: number | null;
  bytesLimit: number | null;
  bytesReserved: number | null;
  peakBytesReserved: number | null;
  bytesReservableLimit: number | null;
  largestFreeBlockBytes: number | null;
  poolBytes: number | null;
  peakPoolBytes: number | null;
}

export interface NativeCompiledMemoryStats {
  generatedCodeBytes: number;
  argumentBytes: number;
  outputBytes: number;
  aliasBytes: number;
  tempBytes: number;
  peakMemoryBytes: number;
}

export interface NativeBuffer {
  describe(): { type: number; dims: number[]; onDeviceBytes: number; memoryKind: string; deviceIndex: number };
  toHost(destination?: ArrayBufferView): Promise<Buffer | undefined>;
  copyToMemory(memoryIndex: number): Promise<NativeBuffer>;
  isDeleted(): boolean;
  dispose(): void;
}

declare const boundBrand: unique symbol;
/** bindArguments' opaque handle (a tagged external). */
export interface NativeBoundArguments {
  readonly [boundBrand]: true;
}

export interface NativeExecutable {
  describe(): {
    numOutputs: number;
    outputTypes: number[];
    outputDims: number[][];
    memoryStats: NativeCompiledMemoryStats | null;
  };
  /**
   * `lane.background` runs the call on the background threads (warmup), not the serving ones
   * (on a serializing client only with `lane.besideOthers`); `bound`'s buffers follow `args`.
   */
  execute(
    args: Array<NativeBuffer | NativeHostArray>,
    deviceIndex: number,
    download: true,
    lane?: { background: boolean; besideOthers?: boolean },
    bound?: NativeBoundArguments,
  ): Promise<NativeHostResult[]>;
  execute(
    args: Array<NativeBuffer | NativeHostArray>,
    deviceIndex: number,
    download: false,
    lane?: { background: boolean; besideOthers?: boolean },
    bound?: NativeBoundArguments,
  ): Promise<NativeBuffer[]>;
  /**
   * The same execution on the calling thread, outputs downloaded (see Executable.runInline); null
   * when the client serializes its executions and another one is under way.
   */
  executeInline(
    args: Array<NativeBuffer | NativeHostArray>,
    deviceIndex: number,
    download: true,
    bound?: NativeBoundArguments,
  ): NativeHostResult[] | null;
  serialize(): Promise<Buffer>;
  dispose(): void;
  /** Disposed now; the PJRT executable is destroyed on the background lane (see Executable.disposeInBackground). */
  disposeInBackground(): void;
}

export interface NativeClient {
  platformName(): string;
  platformVersion(): string;
  devices(): NativeDeviceInfo[];
  memoryStats(deviceIndex: number): NativeMemoryStats | null;
  ledger(): { liveBuffers: number; liveBufferBytes: number; liveExecutables: number };
  compile(code: Uint8Array | string, options?: undefined): Promise<NativeExecutable>;
  deserializeAndLoad(serialized: Uint8Array): Promise<NativeExecutable>;
  upload(array: NativeHostArray, deviceIndex: number, memoryIndex: number): Promise<NativeBuffer>;
  copyBuffers(buffers: NativeBuffer[], memoryIndex: number): Promise<NativeBuffer[]>;
  createArena(deviceIndex: number, memoryIndex: number, limitBytes: number, chunkBytes: number): NativeArena;
  disposeInBackground(buffers: NativeBuffer[]): void;
  dispose(): void;
  isDisposed(): boolean;
}

export type NativeOptionKind = 'string' | 'int64' | 'int64list' | 'float' | 'bool';
export interface NativeArenaStats {
  limitBytes: number;
  mappedBytes: number;
  usedBytes: number;
  largestFreeBytes: number;
  ranges: number;
  chunks: number;
  failedPlacements: number;
}

export interface NativeArena {
  /** One promise per lane, or null when the arrays do not fit under the limit (nothing is reserved then). */
  place(arrays: NativeHostArray[], lanes: number[][]): Promise<NativeBuffer[]>[] | null;
  refill(buffers: NativeBuffer[], arrays: NativeHostArray[], lanes: number[][]): Promise<void>[];
  stats(): NativeArenaStats;
  setLimit(bytes: number): void;
  dispose(): void;
}

export interface NativeOption {
  name: string;
  kind: NativeOptionKind;
  value: string | number | number[] | boolean;
}

export interface NativePluginInfo {
  path: string;
  apiVersion: [number, number];
  apiStructSize: number;
  declaredMinor: number;
  attributes: Record<string, string | number | number[] | boolean>;
}

export interface NativeBinding {
  init(pjrtError: typeof PjrtError, disposedError: typeof DisposedError): void;
  loadPlugin(path: string): NativePluginInfo;
  loadPluginAsync(path: string): Promise<NativePluginInfo>;
  createClient(pluginPath: string, options: NativeOption[]): Promise<NativeClient>;
  /** madvise(MADV_HUGEPAGE) over the pages wholly inside `view`; false where not applied. */
  adviseHugePages(view: ArrayBufferView): boolean;
  /** Device buffers of one client and device, read once for execute()'s `bound` (BoundArguments). */
  bindArguments(buffers: NativeBuffer[]): NativeBoundArguments;
  /** The serialized CompileOptionsProto that every compile and deserializeAndLoad uses. */
  readonly compileOptions: Buffer;
  /** Threads the addon runs blocking PJRT calls on (HLOSERVE_NATIVE_THREADS, default 4). */
  readonly workerThreads: number;
  /**
   * What the background threads (every compile, deserialize and serialize, and warmup executions)
   * run at: 'idle' (SCHED_IDLE), 'nice' (nice 19) or 'normal'; HLOSERVE_BACKGROUND_PRIORITY asks,
   * this says what the system granted.
   */
  readonly backgroundPriority: 'idle' | 'nice' | 'normal';
  /**
   * How often (µs) each CPU is nudged while a build runs on lowered background threads
   * (HLOSERVE_BUILD_NUDGE_US, default 100 where builds are confined, 500 on one CPU); 0: off, or
   * the background threads run at 'normal'.
   */
  readonly buildNudgeMicros: number;
  /** Nudges so far, over the process's life. */
  buildNudges(): number;
  /** Times builds were confined off the serving CPU, over the process's life. */
  buildConfinements(): number;
  /** The CPU kept free of builds while they overlap serving work; -1: no confinement. */
  readonly buildServingCpu: number;
  /** Whether confinement also holds the serving threads off the build's CPU (HLOSERVE_BUILD_CONFINE_SERVING). */
  readonly buildConfinesServing: boolean;
  /** glibc's mmap threshold the addon fixed (32 MiB unless MALLOC_MMAP_THRESHOLD_ chose one); 0: left to the libc. */
  readonly mallocMmapThreshold: number;
  /** The mmap threshold in force now: lowered while a build runs (0: left to the libc). */
  mallocMmapThresholdNow(): number;
  /** Copies `length` bytes at `position` of an open shm object into a new Buffer, on the addon's threads. */
  shmRead(fd: number, position: number, length: number, minSize: number): Promise<Buffer>;
  /** Writes `data` at `position` of an open shm object, on the addon's threads. */
  shmWrite(fd: number, position: number, data: ArrayBufferView, minSize: number): Promise<void>;
  /** Maps [offset, offset + length) of an open shm object once, shared; null when it cannot. */
  shmMap(fd: number, offset: number, length: number): Buffer | null;
  /** Whether the mapping holding `view` took a SIGBUS (its object truncated under a copy). */
  shmFaulted(view: ArrayBufferView): boolean;
  PjrtBuffer: abstract new (...args: never[]) => NativeBuffer;
  PjrtExecutable: abstract new (...args: never[]) => NativeExecutable;
  PjrtClient: abstract new (...args: never[]) => NativeClient;
}

let cached: NativeBinding | undefined;

/** The addon, loaded and initialised once per environment. */
export function binding(): NativeBinding {
  if (cached) return cached;
  const here = dirname(fileURLToPath(import.meta.url));
  // dist/lib -> package root
  // HLOSERVE_ADDON points at another build of the same addon (the ASan build of scripts/asan.sh).
  const file = process.env.HLOSERVE_ADDON ?? join(here, '..', '..', 'build', 'Release', 'hloserve_pjrt.node');
  if (!existsSync(file)) {
    throw new PluginLoadError(`the hloserve native addon is not built (${file} is missing): run 'npm install'`);
  }
  const b = createRequire(import.meta.url)(file) as NativeBinding;
  b.init(PjrtError, DisposedError);
  cached = b;
  return b;
}
