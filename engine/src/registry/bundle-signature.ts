import { type BigIntStats, readdirSync, statSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** What a bundle directory looks like on disk: its identity and every file's size and mtime. */
export interface BundleSignature {
  /** `dev:ino` of the directory: the same after a rename, different after delete-and-recreate. */
  readonly directoryId: string;
  /** Every file under the directory (recursively), sorted: `path size mtimeNs` per line. */
  readonly files: string;
}

/**
 * Reads a bundle directory's signature, or null when it is gone. Every file counts, not a fixed
 * list: an edit to any file of the bundle (a variant module, a vocabulary) is a change.
 */
export async function bundleSignature(dir: string): Promise<BundleSignature | null> {
  try {
    const d = await stat(dir, { bigint: true });
    if (!d.isDirectory()) return null;
    const lines: string[] = [];
    await walk(dir, '', lines);
    return signatureOf(d, lines);
  } catch (err) {
    if (isGone(err)) return null;
    throw err;
  }
}

/**
 * bundleSignature, with blocking calls: for the repository's scan thread (repository-scan-thread.ts),
 * where a thousand bundles' promises each cost the serving thread 0.2-0.3 s a scan. The same lines.
 */
export function bundleSignatureSync(dir: string): BundleSignature | null {
  try {
    const d = statSync(dir, { bigint: true });
    if (!d.isDirectory()) return null;
    const lines: string[] = [];
    walkSync(dir, '', lines);
    return signatureOf(d, lines);
  } catch (err) {
    if (isGone(err)) return null;
    throw err;
  }
}

const isGone = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';
const fileLine = (path: string, s: BigIntStats) => `${path} ${s.size} ${s.mtimeNs}`;

function signatureOf(dir: BigIntStats, lines: string[]): BundleSignature {
  lines.sort();
  return { directoryId: `${dir.dev}:${dir.ino}`, files: lines.join('\n') };
}

async function walk(root: string, rel: string, out: string[]): Promise<void> {
  const entries = await readdir(join(root, rel), { withFileTypes: true });
  for (const e of entries) {
    const path = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) await walk(root, path, out);
    else {
      try {
        out.push(fileLine(path, await stat(join(root, path), { bigint: true })));
      } catch (err) {
        // A file removed between the listing and its stat: the next observation sees the change.
        if (!isGone(err)) throw err;
      }
    }
  }
}

function walkSync(root: string, rel: string, out: string[]): void {
  for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
    const path = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) walkSync(root, path, out);
    else {
      try {
        out.push(fileLine(path, statSync(join(root, path), { bigint: true })));
      } catch (err) {
        if (!isGone(err)) throw err;
      }
    }
  }
}
