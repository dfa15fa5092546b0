import { type FSWatcher, watch } from 'node:fs';
import { clampTimerMs } from '@hloserve/common/timers';
import type { Logger } from '../log.js';
import type { BundleSignature } from './bundle-signature.js';
import { RepositoryScanner } from './repository-scan.js';

/** What the watcher asks of the worker; each settles when the operation has. */
export interface WatcherActions {
  /** Load or reload `name` from its bundle directory. */
  load(name: string): Promise<unknown>;
  unload(name: string): Promise<unknown>;
  /** The directory of a loaded model was renamed: move it, recompile nothing. */
  rename(from: string, to: string): Promise<unknown>;
  /** Loaded models and what they were built from (for renames and the starting point). */
  loaded(): readonly { readonly name: string; readonly signature: string; readonly directoryId: string }[];
}

export interface RepositoryWatcherOptions {
  readonly repo: string;
  readonly pollSeconds: number;
  /** Only these names (models_include); empty = all. */
  readonly include: readonly string[];
  readonly log: Logger;
  readonly actions: WatcherActions;
  /**
   * How soon after a file event the repository is looked at (and again, to see it settled):
   * node.yaml's model_settle_seconds; default 250 ms.
   */
  readonly settleMs?: number;
}

type Observation = ReadonlyMap<string, BundleSignature>;

/**
 * dynamic mode: keeps the loaded set equal to the repository. File events (fs.watch) trigger a
 * look soon after; a poll every model_poll_seconds catches what events miss (network file
 * systems, a watch that failed). Each look reads the bundles on the scanner's thread. A bundle is acted on only when its signature (every file's size
 * and mtime) is the same in two observations in a row, so a copy in progress is never loaded half
 * written: added -> load, changed -> reload, gone -> unload, a loaded model's directory under a
 * new name with the same content -> rename in place.
 */
export class RepositoryWatcher {
  readonly #o: RepositoryWatcherOptions;
  readonly #settleMs: number;
  /** The signature each name was last asked to load (a failed one is retried when it changes). */
  readonly #requested = new Map<string, string>();
  #previous: Observation | null = null;
  #watcher: FSWatcher | null = null;
  #poll: ReturnType<typeof setInterval> | null = null;
  #soon: ReturnType<typeof setTimeout> | null = null;
  #scanning: Promise<void> | null = null;
  #again = false;
  #closed = false;
  /** Reads the repository off the serving thread. */
  readonly #scanner = new RepositoryScanner();
  /** Actions started by scans and not settled yet (tests and stop() wait on them). */
  readonly #pending = new Set<Promise<unknown>>();

  constructor(options: RepositoryWatcherOptions) {
    this.#o = options;
    this.#settleMs = options.settleMs ?? 250;
    for (const m of options.actions.loaded()) this.#requested.set(m.name, m.signature);
  }

  start(): void {
    try {
      this.#watcher = watch(this.#o.repo, { recursive: true }, () => this.#scanSoon());
      this.#watcher.on('error', (err) => {
        this.#o.log.warn('repository watch failed; polling only', { error: err.message });
        this.#watcher?.close();
        this.#watcher = null;
      });
    } catch (err) {
      this.#o.log.warn('repository watch unavailable; polling only', { error: (err as Error).message });
    }
    this.#poll = setInterval(() => this.#scanSoon(0), clampTimerMs(this.#o.pollSeconds * 1000));
    this.#poll.unref();
    this.#scanSoon(0);
  }

  /** Stops watching; resolves once the scan and the actions under way have settled. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#watcher?.close();
    if (this.#poll !== null) clearInterval(this.#poll);
    if (this.#soon !== null) clearTimeout(this.#soon);
    await this.#scanning;
    await Promise.allSettled([...this.#pending]);
    await this.#scanner.close();
  }

  /** Looks at the repository now and acts on what is stable (tests drive it directly). */
  scan(): Promise<void> {
    if (this.#scanning !== null) {
      this.#again = true;
      return this.#scanning;
    }
    this.#scanning = this.#scanOnce()
      .catch((err: unknown) => this.#o.log.warn('repository scan failed', { error: (err as Error).message }))
      .finally(() => {
        this.#scanning = null;
        if (this.#again && !this.#closed) {
          this.#again = false;
          this.#scanSoon();
        }
      });
    return this.#scanning;
  }

  /** Settles when every action started so far has. */
  async idle(): Promise<void> {
    while (this.#pending.size > 0 || this.#scanning !== null) {
      await this.#scanning;
      await Promise.allSettled([...this.#pending]);
    }
  }

  #scanSoon(ms = this.#settleMs): void {
    if (this.#closed) return;
    if (this.#soon !== null) {
      if (ms > 0) return;
      clearTimeout(this.#soon);
    }
    this.#soon = setTimeout(() => {
      this.#soon = null;
      void this.scan();
    }, clampTimerMs(ms));
    this.#soon.unref();
  }

  #observe(): Promise<Observation> {
    return this.#scanner.observe(this.#o.repo, this.#o.include);
  }

  async #scanOnce(): Promise<void> {
    const now = await this.#observe();
    const prev = this.#previous;
    this.#previous = now;
    if (prev === null) {
      this.#scanSoon();
      return;
    }
    let unsettled = false;
    const stable = new Map<string, BundleSignature>();
    for (const [name, sig] of now) {
      const before = prev.get(name);
      if (before !== undefined && before.files === sig.files && before.directoryId === sig.directoryId)
        stable.set(name, sig);
      else unsettled = true;
    }
    // Gone in two observations in a row, and nothing new still settling: a scan that ran across a
    // rename sees the old name gone one observation before the new one is stable, and unloading
    // then would recompile the model under its new name instead of moving it.
    const arriving = [...now.keys()].some((n) => !stable.has(n) && !this.#requested.has(n));
    const gone = arriving ? [] : [...this.#requested.keys()].filter((n) => !now.has(n) && !prev.has(n));
    if (prev.size !== now.size || [...prev.keys()].some((n) => !now.has(n))) unsettled = true;
    const loaded = this.#o.actions.loaded();
    for (const [name, sig] of stable) {
      if (this.#requested.get(name) === sig.files) continue;
      if (!this.#requested.has(name)) {
        // A loaded model whose name left the repository, with this directory and content: a rename.
        const from = loaded.find(
          (m) => m.directoryId === sig.directoryId && m.signature === sig.files && !now.has(m.name) && m.name !== name,
        );
        if (from !== undefined && gone.includes(from.name)) {
          this.#requested.delete(from.name);
          gone.splice(gone.indexOf(from.name), 1);
          this.#requested.set(name, sig.files);
          this.#o.log.info('repository: directory renamed', { from: from.name, to: name });
          this.#track(this.#o.actions.rename(from.name, name));
          continue;
        }
      }
      this.#o.log.info(this.#requested.has(name) ? 'repository: bundle changed' : 'repository: bundle added', {
        model: name,
      });
      this.#requested.set(name, sig.files);
      this.#track(this.#o.actions.load(name));
    }
    for (const name of gone) {
      this.#requested.delete(name);
      this.#o.log.info('repository: bundle removed', { model: name });
      this.#track(this.#o.actions.unload(name));
    }
    // Something is still moving: look again once it may have settled, not only at the next poll.
    if (unsettled) this.#scanSoon();
  }

  #track(p: Promise<unknown>): void {
    // Failures are reported by the lifecycle (log, index reason, metric, event).
    const settled = p.catch(() => undefined);
    this.#pending.add(settled);
    void settled.then(() => this.#pending.delete(settled));
  }
}
