/**
 * The compiled-executable disk cache: a restart or a reload of an unchanged module loads the
 * plugin's serialized executable instead of compiling again.
 *
 * One file per entry, `<key>.hxc`, written to a temporary name and renamed, so a reader sees a
 * whole entry or none. The key is the sha256 of the module bytes and of everything else that
 * decides the compiled code: the plugin (path, file size and mtime, API version, attributes), the
 * client's platform, the compile options and the device kind. A header (magic, key, payload length,
 * payload sha256) lets a truncated, corrupt or misplaced entry be detected before the plugin reads
 * it (a plugin trusts serialized bytes as its own object code); such an entry is removed and the
 * module recompiled, with a warning. The directory is bounded in bytes: least recently used entries
 * go first, by file mtime, which a hit refreshes, so the order survives restarts.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, stat, unlink, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type CompileIdentity,
  type CompileOptions,
  type Executable,
  programSignature,
  type Runtime,
} from '@hloserve/native';
import { sha256InSlices } from './chunked-hash.js';
import { RunRecord } from './run-record.js';

const MAGIC = Buffer.from('HLOXEC\u0000\u0001', 'latin1');
const KEY_BYTES = 32;
const HEADER_BYTES = MAGIC.length + KEY_BYTES + 8 + 32;
const SUFFIX = '.hxc';
const TEMP_SUFFIX = '.tmp';
/** A temporary file older than this is a write that died with its process. */
const STALE_TEMP_MS = 10 * 60 * 1000;

export interface ExecutableCacheLogger {
  warn(msg: string, fields?: Record<string, unknown>): void;
}

export interface ExecutableCacheOptions {
  /** The directory entries live in (created if missing). */
  readonly dir: string;
  /** Upper bound on the bytes of all entries; an entry larger than this is not stored. */
  readonly maxBytes: number;
  readonly logger?: ExecutableCacheLogger;
  /**
   * What the key takes from a runtime; the default is runtime.compileIdentity. Tests replace it to
   * stand for a plugin upgrade.
   */
  readonly identity?: (runtime: Runtime) => CompileIdentity;
}

export interface ExecutableCacheStats {
  /** Executables loaded from disk. */
  readonly hits: number;
  /** Executables compiled (nothing usable on disk). */
  readonly misses: number;
  /** Compiles that waited for a concurrent compile of the same key instead of compiling. */
  readonly shared: number;
  /** Entries found truncated, corrupt or unloadable, removed and recompiled. */
  readonly rejected: number;
  readonly evictions: number;
  readonly entries: number;
  readonly bytes: number;
}

interface Entry {
  bytes: number;
  usedMs: number;
}

type Counter = 'hits' | 'misses' | 'shared' | 'rejected' | 'evictions';

/** Why an entry on disk was not used: absent, or unusable (with the reason to log). */
type ReadOutcome = { readonly payload: Buffer } | { readonly missing: true } | { readonly bad: string };

export class ExecutableCache {
  readonly dir: string;
  readonly maxBytes: number;
  readonly #logger: ExecutableCacheLogger | undefined;
  readonly #identity: (runtime: Runtime) => CompileIdentity;
  readonly #entries = new Map<string, Entry>();
  #bytes = 0;
  readonly #counts: Record<Counter, number> = { hits: 0, misses: 0, shared: 0, rejected: 0, evictions: 0 };
  /** Executables loaded from an entry on disk (compiled and served by an earlier start). */
  readonly #fromDisk = new WeakSet<Executable>();
  /** Executable -> the key of its entry (loaded from it, or compiled and written under it). */
  readonly #keys = new WeakMap<Executable, string>();
  /** Which entries have run, with which argument types (runs.json). */
  #runs!: RunRecord;
  /** Key -> the serialized executable being produced for it (null when the plugin cannot serialize). */
  readonly #pending = new Map<string, Promise<Uint8Array | null>>();
  /** Plugin path -> its file's size and mtime, read once per process. */
  readonly #pluginFiles = new Map<string, string>();

  private constructor(o: ExecutableCacheOptions) {
    this.dir = o.dir;
    this.maxBytes = o.maxBytes;
    this.#logger = o.logger;
    this.#identity = o.identity ?? ((rt) => rt.compileIdentity);
  }

  /** Opens (creating) the directory and indexes the entries already there. */
  static async open(o: ExecutableCacheOptions): Promise<ExecutableCache> {
    if (!Number.isSafeInteger(o.maxBytes) || o.maxBytes < 1)
      throw new RangeError('maxBytes must be a positive integer');
    const cache = new ExecutableCache(o);
    await mkdir(o.dir, { recursive: true });
    const now = Date.now();
    for (const name of await readdir(o.dir)) {
      const path = join(o.dir, name);
      const st = await stat(path).catch(() => null);
      if (!st?.isFile()) continue;
      if (name.endsWith(TEMP_SUFFIX)) {
        if (now - st.mtimeMs > STALE_TEMP_MS) await unlink(path).catch(() => undefined);
      } else if (name.endsWith(SUFFIX) && /^[0-9a-f]{64}$/.test(name.slice(0, -SUFFIX.length))) {
        cache.#remember(name.slice(0, -SUFFIX.length), st.size, st.mtimeMs);
      }
    }
    cache.#runs = await RunRecord.open(o.dir, (key) => cache.#entries.has(key));
    await cache.#evict(null);
    return cache;
  }

  stats(): ExecutableCacheStats {
    return { ...this.#counts, entries: this.#entries.size, bytes: this.#bytes };
  }

  /** The entry key of `code` compiled by `runtime`: hex sha256. */
  async keyOf(runtime: Runtime, code: Uint8Array): Promise<string> {
    const id = this.#identity(runtime);
    const pluginFile = await this.#pluginFile(id.pluginPath);
    return (await sha256InSlices(JSON.stringify({ ...id, pluginFile }), '\u0000', code)).toString('hex');
  }

  /**
   * Seconds of the recorded run of `exe`'s entry with argument types `types` (RunRecord.types):
   * an earlier start ran this very entry with these types. Undefined when not recorded.
   */
  ranWith(exe: Executable, types: string): number | undefined {
    const key = this.#keys.get(exe);
    return key === undefined ? undefined : this.#runs.ran(key, types);
  }

  /**
   * Records that each `exe` ran with argument types `types` in `seconds` (a model's warmup). The
   * record is written within RunRecord's delay, once for every run recorded meanwhile (a start of
   * many models), and at once by flushRuns (a stop).
   */
  recordRuns(runs: readonly { exe: Executable; types: string; seconds: number }[]): void {
    const known: [string, string, number][] = [];
    for (const r of runs) {
      const key = this.#keys.get(r.exe);
      if (key !== undefined && this.#entries.has(key)) known.push([key, r.types, r.seconds]);
    }
    this.#runs.set(known);
  }

  /** Writes the run record now if runs are waiting to be written (a stopping worker). */
  flushRuns(): void {
    this.#runs.flush();
  }

  /** True when `exe` came from an entry on disk rather than from a compile in this process. */
  loadedFromDisk(exe: Executable): boolean {
    return this.#fromDisk.has(exe);
  }

  /**
   * Whether an entry for `code` is indexed (it may still turn out unusable when read): a caller
   * can load such modules side by side and compile the others one at a time.
   */
  async holds(runtime: Runtime, code: Uint8Array): Promise<boolean> {
    return this.#entries.has(await this.keyOf(runtime, code));
  }

  /**
   * runtime.compile(code, options), answered from disk when an entry for the same key is there.
   * Every caller gets its own Executable (and disposes it); concurrent calls for one key compile
   * once and the others load what that compile serialized. Compile errors reach every caller.
   * `queued` is called once, when the load or compile has been handed to the runtime's threads or
   * waits on another caller's compile, and at the latest before the promise settles.
   */
  async compile(
    runtime: Runtime,
    code: Uint8Array,
    options: CompileOptions = {},
    queued?: () => void,
  ): Promise<Executable> {
    const once = callOnce(queued);
    try {
      return await this.#compile(runtime, code, options, once);
    } finally {
      once();
    }
  }

  async #compile(
    runtime: Runtime,
    code: Uint8Array,
    options: CompileOptions,
    queued: (() => void) | undefined,
  ): Promise<Executable> {
    options.signal?.throwIfAborted();
    const key = await this.keyOf(runtime, code);
    const loadOptions = { signature: options.signature ?? programSignature(code) ?? undefined };
    const pending = this.#pending.get(key);
    if (pending) {
      queued?.();
      const serialized = await pending;
      if (serialized) {
        const exe = await runtime.deserializeAndLoad(serialized, loadOptions).catch(() => null);
        if (exe) {
          this.#counts.shared++;
          this.#keys.set(exe, key);
          return exe;
        }
      }
      this.#counts.misses++;
      return runtime.compile(code, options);
    }
    let settle!: (v: Uint8Array | null) => void;
    let fail!: (e: unknown) => void;
    const shared = new Promise<Uint8Array | null>((resolve, reject) => {
      settle = resolve;
      fail = reject;
    });
    shared.catch(() => undefined);
    this.#pending.set(key, shared);
    try {
      const [exe, serialized] = await this.#loadOrCompile(key, runtime, code, options, loadOptions, queued);
      this.#keys.set(exe, key);
      settle(serialized);
      return exe;
    } catch (err) {
      fail(err);
      throw err;
    } finally {
      this.#pending.delete(key);
    }
  }

  async #loadOrCompile(
    key: string,
    runtime: Runtime,
    code: Uint8Array,
    options: CompileOptions,
    loadOptions: CompileOptions,
    queued: (() => void) | undefined,
  ): Promise<[Executable, Uint8Array | null]> {
    const read = await this.#read(key);
    if ('payload' in read) {
      try {
        const loading = runtime.deserializeAndLoad(read.payload, loadOptions);
        queued?.();
        const exe = await loading;
        this.#counts.hits++;
        this.#fromDisk.add(exe);
        await this.#touch(key);
        return [exe, read.payload];
      } catch (err) {
        await this.#reject(key, `the plugin refused it: ${(err as Error).message}`);
      }
    } else if ('bad' in read) {
      await this.#reject(key, read.bad);
    }
    this.#counts.misses++;
    const compiling = runtime.compile(code, options);
    queued?.();
    const exe = await compiling;
    let serialized: Uint8Array | null = null;
    try {
      serialized = await exe.serialize();
      await this.#write(key, serialized);
    } catch (err) {
      // The executable is good; only the cache missed out. The next start compiles again.
      this.#logger?.warn('compiled executable not cached', { key, error: (err as Error).message });
    }
    return [exe, serialized];
  }

  async #read(key: string): Promise<ReadOutcome> {
    let file: Buffer;
    try {
      file = await readFile(this.#path(key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        this.#forget(key);
        return { missing: true };
      }
      return { bad: `unreadable: ${(err as Error).message}` };
    }
    if (file.length < HEADER_BYTES) return { bad: `truncated: ${file.length} bytes, shorter than its header` };
    if (!file.subarray(0, MAGIC.length).equals(MAGIC)) return { bad: 'not an hloserve executable entry' };
    let at = MAGIC.length;
    if (file.subarray(at, at + KEY_BYTES).toString('hex') !== key) return { bad: 'stale: written for another key' };
    at += KEY_BYTES;
    const length = file.readBigUInt64LE(at);
    at += 8;
    const checksum = file.subarray(at, at + 32);
    const payload = file.subarray(HEADER_BYTES);
    if (length !== BigInt(payload.length)) return { bad: `truncated: ${payload.length} of ${length} payload bytes` };
    if (!(await sha256InSlices(payload)).equals(checksum)) return { bad: 'corrupt: checksum mismatch' };
    return { payload };
  }

  async #write(key: string, payload: Uint8Array): Promise<void> {
    const total = HEADER_BYTES + payload.byteLength;
    if (total > this.maxBytes) return;
    const header = Buffer.alloc(HEADER_BYTES);
    MAGIC.copy(header, 0);
    Buffer.from(key, 'hex').copy(header, MAGIC.length);
    header.writeBigUInt64LE(BigInt(payload.byteLength), MAGIC.length + KEY_BYTES);
    (await sha256InSlices(payload)).copy(header, MAGIC.length + KEY_BYTES + 8);
    const temp = join(this.dir, `${key}.${process.pid}.${randomBytes(4).toString('hex')}${TEMP_SUFFIX}`);
    const fh = await open(temp, 'w', 0o600);
    try {
      await fh.writev([header, payload]);
      await fh.datasync();
    } catch (err) {
      await fh.close();
      await unlink(temp).catch(() => undefined);
      throw err;
    }
    await fh.close();
    await rename(temp, this.#path(key));
    this.#remember(key, total, Date.now());
    await this.#evict(key);
  }

  async #reject(key: string, reason: string): Promise<void> {
    this.#counts.rejected++;
    this.#logger?.warn('compiled executable cache entry unusable; recompiling', { key, reason });
    this.#forget(key);
    await unlink(this.#path(key)).catch(() => undefined);
  }

  async #touch(key: string): Promise<void> {
    const now = Date.now();
    const e = this.#entries.get(key);
    if (e) e.usedMs = now;
    const t = new Date(now);
    await utimes(this.#path(key), t, t).catch(() => undefined);
  }

  /** Removes least recently used entries until the total fits; `keep` (just written) goes last. */
  async #evict(keep: string | null): Promise<void> {
    if (this.#bytes <= this.maxBytes) return;
    const order = [...this.#entries].filter(([k]) => k !== keep).sort((a, b) => a[1].usedMs - b[1].usedMs);
    for (const [key] of order) {
      if (this.#bytes <= this.maxBytes) break;
      this.#forget(key);
      this.#counts.evictions++;
      await unlink(this.#path(key)).catch(() => undefined);
    }
  }

  #remember(key: string, bytes: number, usedMs: number): void {
    this.#forget(key);
    this.#entries.set(key, { bytes, usedMs });
    this.#bytes += bytes;
  }

  #forget(key: string): void {
    const e = this.#entries.get(key);
    if (!e) return;
    this.#bytes -= e.bytes;
    this.#entries.delete(key);
    this.#runs?.delete(key);
  }

  #path(key: string): string {
    return join(this.dir, key + SUFFIX);
  }

  async #pluginFile(path: string): Promise<string> {
    let v = this.#pluginFiles.get(path);
    if (v === undefined) {
      const st = await stat(path).catch(() => null);
      v = st ? `${st.size}:${Math.trunc(st.mtimeMs)}` : 'absent';
      this.#pluginFiles.set(path, v);
    }
    return v;
  }
}

/** `fn` (if any) as a function that calls it the first time only. */
export function callOnce(fn: (() => void) | undefined): () => void {
  let called = fn === undefined;
  return () => {
    if (called) return;
    called = true;
    fn!();
  };
}

/**
 * The worker's cache: `<cacheDir>/executables` bounded by compile_cache.max_bytes, or null when
 * that is 0 or the directory cannot be used (then every load compiles, as without a cache).
 */
export async function openExecutableCache(
  settings: { readonly cacheDir: string; readonly compileCache: { readonly maxBytes: number } },
  logger: ExecutableCacheLogger,
): Promise<ExecutableCache | null> {
  if (settings.compileCache.maxBytes === 0) return null;
  const dir = join(settings.cacheDir, 'executables');
  try {
    return await ExecutableCache.open({ dir, maxBytes: settings.compileCache.maxBytes, logger });
  } catch (err) {
    logger.warn('compiled-executable cache unavailable; every load compiles', { dir, error: (err as Error).message });
    return null;
  }
}
