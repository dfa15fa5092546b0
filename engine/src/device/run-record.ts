/**
 * Which compiled-executable cache entries have run, with which argument types, and how long that
 * first run took: `runs.json` beside the entries. A start that loads an entry whose record names
 * the argument types it will pass now need not run it before serving (CompiledModel
 * .warmBeforeServing) and seeds the scheduler with the recorded time. The entry's key already
 * covers the module, the plugin and the compile options; the types cover the manifest and the
 * weights, which the key does not. A record is only a shortcut: a missing, unreadable or lost one
 * (two workers writing the file at once, the last one's wins) means a run before serving, as
 * without it.
 */
import { renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';

export const RUN_RECORD_FILE = 'runs.json';

interface Run {
  /** The argument types the run was given, as RunRecord.types wrote them. */
  readonly types: string;
  /** Seconds the run took (a first run: what a warmup measures). */
  readonly seconds: number;
}

/** How long runs are gathered before the record is written. */
export const WRITE_DELAY_MS = 1000;

export class RunRecord {
  readonly #path: string;
  readonly #runs: Map<string, Run>;
  #dirty = false;
  #timer: NodeJS.Timeout | null = null;

  private constructor(dir: string, runs: Map<string, Run>) {
    this.#path = join(dir, RUN_RECORD_FILE);
    this.#runs = runs;
  }

  /** Reads the record in `dir`, keeping only the keys `keep` accepts (the entries on disk). */
  static async open(dir: string, keep: (key: string) => boolean): Promise<RunRecord> {
    const runs = new Map<string, Run>();
    try {
      const parsed = JSON.parse(await readFile(join(dir, RUN_RECORD_FILE), 'utf8')) as unknown;
      if (parsed !== null && typeof parsed === 'object')
        for (const [key, r] of Object.entries(parsed as Record<string, unknown>)) {
          const run = r as Partial<Run> | null;
          if (keep(key) && typeof run?.types === 'string' && typeof run.seconds === 'number' && run.seconds >= 0)
            runs.set(key, { types: run.types, seconds: run.seconds });
        }
    } catch {
      // No record yet, or one not worth reading: every cache-loaded executable runs before serving.
    }
    return new RunRecord(dir, runs);
  }

  /** The argument types as a record holds them. */
  static types(parameters: readonly { readonly dtype: string; readonly shape: readonly number[] }[]): string {
    return parameters.map((p) => `${p.dtype}[${p.shape.join(',')}]`).join(' ');
  }

  /** Seconds of the recorded run of entry `key` with exactly `types`; undefined when there is none. */
  ran(key: string, types: string): number | undefined {
    const r = this.#runs.get(key);
    return r?.types === types ? r.seconds : undefined;
  }

  /** Records runs (entry key, types, seconds); the file is written within WRITE_DELAY_MS. */
  set(runs: readonly (readonly [key: string, types: string, seconds: number])[]): void {
    if (runs.length === 0) return;
    for (const [key, types, seconds] of runs) this.#runs.set(key, { types, seconds });
    this.#schedule();
  }

  /** Forgets entry `key` (removed from the cache: a new entry under it has not run). */
  delete(key: string): void {
    if (this.#runs.delete(key)) this.#schedule();
  }

  /** Writes what is not written yet, now (a stopping worker). */
  flush(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (!this.#dirty) return;
    this.#dirty = false;
    this.#write();
  }

  // One write for the runs of a while: written after each model's warmup, the whole record was
  // rewritten once per model, quadratic in a start of many models (0.8 s of the serving thread
  // for a thousand; bench/RESULTS.md, session 23).
  #schedule(): void {
    this.#dirty = true;
    if (this.#timer !== null) return;
    this.#timer = setTimeout(() => this.flush(), WRITE_DELAY_MS);
    this.#timer.unref();
  }

  // Synchronous (a few KiB): asynchronous writes still under way when a stopping process exited
  // left the last record unwritten (bench/RESULTS.md, session 17).
  #write(): void {
    const temp = `${this.#path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      writeFileSync(temp, JSON.stringify(Object.fromEntries(this.#runs)), { mode: 0o600 });
      renameSync(temp, this.#path);
    } catch {
      try {
        unlinkSync(temp);
      } catch {
        // Never written: nothing to remove. A record not written is a run before serving next time.
      }
    }
  }
}
