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
    lines.sort();
    return { directoryId: `${d.dev}:${d.ino}`, files: lines.join('\n') };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

async function walk(root: string, rel: string, out: string[]): Promise<void> {
  const entries = await readdir(join(root, rel), { withFileTypes: true });
  for (const e of entries) {
    const path = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) await walk(root, path, out);
    else {
      try {
        const s = await stat(join(root, path), { bigint: true });
        out.push(`${path} ${s.size} ${s.mtimeNs}`);
      } catch (err) {
        // A file removed between the listing and its stat: the next observation sees the change.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  }
}
