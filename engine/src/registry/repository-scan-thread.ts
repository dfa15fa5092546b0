/**
 * The body of the worker thread that looks at a model repository for dynamic mode
 * (repository-scan.ts): every bundle directory's signature, read with blocking calls here so that
 * the serving thread pays one message per scan instead of a promise per file (0.2-0.3 s of it per
 * scan of a thousand bundles, every model_poll_seconds).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { type BundleSignature, bundleSignatureSync } from './bundle-signature.js';

export interface ScanJob {
  readonly id: number;
  readonly repo: string;
  /** Only these names; empty: every one. */
  readonly include: readonly string[];
}
export type ScanAnswer =
  | { readonly id: number; readonly bundles: readonly (readonly [string, BundleSignature])[] }
  | { readonly id: number; readonly error: string };

/** The repository's bundles (directories with a manifest.yaml, not hidden) and their signatures. */
export function observeRepository(repo: string, include: readonly string[]): [string, BundleSignature][] {
  const out: [string, BundleSignature][] = [];
  let names: string[];
  try {
    names = readdirSync(repo, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
      .map((e) => e.name);
  } catch {
    return out;
  }
  for (const name of names) {
    if (include.length > 0 && !include.includes(name)) continue;
    const dir = join(repo, name);
    if (!existsSync(join(dir, 'manifest.yaml'))) continue;
    const sig = bundleSignatureSync(dir);
    if (sig !== null) out.push([name, sig]);
  }
  return out;
}

/** What the thread is started with (so that importing this module elsewhere starts nothing). */
export const SCAN_THREAD_ROLE = 'repository-scan';

if ((workerData as { role?: string } | null)?.role === SCAN_THREAD_ROLE)
  parentPort!.on('message', (job: ScanJob) => {
    let answer: ScanAnswer;
    try {
      answer = { id: job.id, bundles: observeRepository(job.repo, job.include) };
    } catch (err) {
      answer = { id: job.id, error: (err as Error).message };
    }
    parentPort!.postMessage(answer);
  });
