/**
 * From archive entries to the files of one bundle directory. A bundle is flat: its files may sit
 * at the archive's top level or inside one top-level directory, nowhere deeper. Names are checked
 * before any file gets its name (the archive's bytes were written under names of our own): no
 * absolute paths, no '..', no backslashes or control characters, no duplicates.
 */
import { HOOK_FILES } from '../../bundle/bundle.js';
import { rejected, type ArchiveEntry } from './archive-entries.js';

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** The bundle's files by their name in the bundle, each the archive entry that holds it. */
export function bundleFiles(entries: readonly ArchiveEntry[], o: { allowHooks: boolean }): Map<string, ArchiveEntry> {
  const paths: { parts: string[]; e: ArchiveEntry }[] = [];
  for (const e of entries) {
    const n = e.name;
    if (n.length === 0) throw rejected('an entry has an empty name');
    if (n.includes('\\') || [...n].some((c) => c.charCodeAt(0) < 0x20))
      throw rejected(`${JSON.stringify(n)}: control characters and backslashes are not allowed in names`);
    if (n.startsWith('/') || /^[A-Za-z]:/.test(n)) throw rejected(`${n}: absolute paths are not allowed`);
    const parts = n.replace(/\/$/, '').split('/');
    if (parts.some((p) => p === '..')) throw rejected(`${n}: '..' is not allowed in paths`);
    if (parts.some((p) => p === '' || p === '.')) throw rejected(`${n}: empty or '.' path segments are not allowed`);
    paths.push({ parts, e });
  }
  const files = paths.filter((p) => p.e.kind === 'file');
  if (files.length === 0) throw rejected('the archive holds no files');
  // One shared top-level directory is the bundle's own folder: strip it.
  const top = files[0]!.parts[0]!;
  const strip = files.every((f) => f.parts.length === 2 && f.parts[0] === top) ? 1 : 0;
  for (const d of paths.filter((p) => p.e.kind === 'dir'))
    if (d.parts.length > strip) throw rejected(`${d.e.name}: bundles are flat; subdirectories are not allowed`);
  const out = new Map<string, ArchiveEntry>();
  for (const f of files) {
    const rest = f.parts.slice(strip);
    if (rest.length !== 1) throw rejected(`${f.e.name}: bundles are flat; files must not be in subdirectories`);
    const name = rest[0]!;
    if (!SAFE_NAME.test(name))
      throw rejected(`${f.e.name}: file names must be [A-Za-z0-9._-] and start with a letter or digit`);
    if (out.has(name)) throw rejected(`${f.e.name}: duplicate entry`);
    if (!o.allowHooks && (HOOK_FILES as readonly string[]).includes(name))
      throw rejected(`${name}: bundles with hooks (code run by the server) may be uploaded by admins only`);
    out.set(name, f.e);
  }
  if (!out.has('manifest.yaml')) throw rejected('manifest.yaml: missing (every bundle has one)');
  return out;
}
