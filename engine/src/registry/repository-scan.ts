/**
 * Looks at a model repository on a worker thread of its own (repository-scan-thread.ts). The
 * thread starts at the first scan and stays (unref'd: it keeps no process alive); if it dies, the
 * scan under way fails and the next one starts another.
 */
import { Worker } from 'node:worker_threads';
import type { BundleSignature } from './bundle-signature.js';
import { SCAN_THREAD_ROLE, type ScanAnswer, type ScanJob } from './repository-scan-thread.js';

const THREAD_URL = new URL('./repository-scan-thread.js', import.meta.url);

export class RepositoryScanner {
  #thread: Worker | null = null;
  #next = 1;
  readonly #waiting = new Map<
    number,
    { resolve: (b: Map<string, BundleSignature>) => void; reject: (e: Error) => void }
  >();

  /** Every bundle of `repo` (only `include`'s names, unless empty) and its signature. */
  observe(repo: string, include: readonly string[]): Promise<Map<string, BundleSignature>> {
    const thread = this.#start();
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      thread.postMessage({ id, repo, include: [...include] } satisfies ScanJob);
    });
  }

  /** Stops the thread; a scan under way fails (at once: its answer may already be on its way). */
  async close(): Promise<void> {
    const t = this.#thread;
    this.#thread = null;
    this.#failWaiting(new Error('the repository scan thread was closed'));
    if (t !== null) await t.terminate();
  }

  #failWaiting(err: Error): void {
    for (const w of this.#waiting.values()) w.reject(err);
    this.#waiting.clear();
  }

  #start(): Worker {
    if (this.#thread !== null) return this.#thread;
    const t = new Worker(THREAD_URL, { workerData: { role: SCAN_THREAD_ROLE } });
    t.unref();
    t.on('message', (a: ScanAnswer) => {
      const w = this.#waiting.get(a.id);
      if (w === undefined) return;
      this.#waiting.delete(a.id);
      if ('error' in a) w.reject(new Error(a.error));
      else w.resolve(new Map(a.bundles));
    });
    // Only the current thread's end fails the scans waiting: a closed one's came before (close),
    // and those waiting now are its successor's.
    const fail = (err: Error) => {
      if (this.#thread !== t) return;
      this.#thread = null;
      this.#failWaiting(err);
    };
    t.on('error', fail);
    t.on('exit', (code) => fail(new Error(`the repository scan thread exited (code ${code})`)));
    this.#thread = t;
    return t;
  }
}
