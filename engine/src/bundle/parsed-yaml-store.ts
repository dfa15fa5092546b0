/**
 * Manifests' YAML as it was parsed, kept on disk under `cache_dir` by the SHA-256 of the text, so
 * a start with unchanged manifests reads them with JSON.parse. The YAML parser is cold in a fresh
 * process: the seven example manifests took 25-40 ms of the JS thread at every start, a tenth of
 * a warm start's JS work (bench/RESULTS.md, session 13); JSON.parse takes a fraction of a
 * millisecond for them. Only the parse is kept: every start validates the value again, so its
 * warnings and errors are what the text gives.
 *
 * The key is the text, never the path: a changed manifest misses and is parsed. An entry carries
 * the SHA-256 of its own JSON, so a damaged entry is found and the text parsed again; an
 * unreadable file is an empty store. A value JSON cannot hold exactly (NaN, Infinity, -0) is not
 * kept. Writes go to a temporary file renamed over the old one, so a reader sees one whole file.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

const FORMAT = 1;
/** Entries kept at most; those this process used are kept first. */
const MAX_ENTRIES = 1024;

interface Entry {
  /** SHA-256 of `json`. */
  readonly sum: string;
  readonly json: string;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

export class ParsedYamlStore {
  readonly #file: string;
  readonly #stored: Map<string, Entry>;
  readonly #used = new Map<string, Entry>();
  #changed = false;

  private constructor(file: string, stored: Map<string, Entry>) {
    this.#file = file;
    this.#stored = stored;
  }

  /** The store in `file`; empty when the file is missing, unreadable or not one of ours. */
  static async open(file: string): Promise<ParsedYamlStore> {
    const stored = new Map<string, Entry>();
    try {
      const doc = JSON.parse(await readFile(file, 'utf8')) as { format?: unknown; entries?: unknown };
      if (doc.format === FORMAT && typeof doc.entries === 'object' && doc.entries !== null)
        for (const [key, e] of Object.entries(doc.entries as Record<string, Partial<Entry> | null>))
          if (typeof e?.sum === 'string' && typeof e.json === 'string') stored.set(key, { sum: e.sum, json: e.json });
    } catch {
      // Missing (a first start) or damaged: every manifest is parsed, and the next save rewrites it.
    }
    return new ParsedYamlStore(file, stored);
  }

  /** What `text` parsed to before, or undefined: never stored, or its entry is damaged. */
  lookup(text: string): unknown {
    const key = sha256(text);
    const e = this.#used.get(key) ?? this.#stored.get(key);
    if (e === undefined) return undefined;
    try {
      if (sha256(e.json) !== e.sum) throw new Error('checksum');
      const value: unknown = JSON.parse(e.json);
      this.#used.set(key, e);
      return value;
    } catch {
      this.#stored.delete(key);
      this.#used.delete(key);
      this.#changed = true;
      return undefined;
    }
  }

  /** Keeps what `text` parsed to, for the next start (written by save()). */
  remember(text: string, value: unknown): void {
    const json = JSON.stringify(value);
    if (json === undefined || !isDeepStrictEqual(JSON.parse(json), value)) return;
    this.#used.set(sha256(text), { sum: sha256(json), json });
    this.#changed = true;
  }

  /** Writes the store if anything changed: the entries used or added here first, then the others. */
  async save(): Promise<void> {
    if (!this.#changed) return;
    this.#changed = false;
    const entries: Record<string, Entry> = {};
    let n = 0;
    for (const m of [this.#used, this.#stored])
      for (const [key, e] of m) {
        if (n >= MAX_ENTRIES) break;
        if (key in entries) continue;
        entries[key] = e;
        n++;
      }
    const tmp = `${this.#file}.${process.pid}.tmp`;
    await mkdir(dirname(this.#file), { recursive: true });
    await writeFile(tmp, JSON.stringify({ format: FORMAT, entries }));
    await rename(tmp, this.#file);
  }
}
