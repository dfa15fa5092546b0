/**
 * Resumable uploads of bundle archives: create (name, size, optional sha256), then chunks each
 * sent with the offset they start at (a tus-like protocol), then complete. Bytes go to a staging
 * file under cache_dir; on completion the archive is checked (sha256, format, entries, limits),
 * expanded into a staging directory, validated as a bundle (manifest, every module's signature
 * against the manifest, safetensors headers), and only then moved into the model repository:
 * a rename into place, the previous version kept beside it as `.<name>.previous-<time>`.
 * Until that rename nothing in the repository changes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { cp, mkdir, open, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServeError } from '@hloserve/common/errors';
import { loadBundle } from '../../bundle/bundle.js';
import { CONSOLE_DEFAULTS } from '../../config/defaults.js';
import type { ConsoleConfig } from '../../config/types.js';
import type { Store, UploadRow } from '../../state/store.js';
import type { ArchiveLimits } from './archive-entries.js';
import { formatOf, readArchive } from './archive.js';
import { directorySink, fileSource } from './archive-io.js';
import { bundleFiles } from './bundle-files.js';

export interface UploadLimits extends ArchiveLimits {
  readonly maxUploadBytes: number;
}

/** The limits under node.yaml's console settings; the file count and expansion ratio are fixed. */
export function uploadLimits(c: Pick<ConsoleConfig, 'uploadMaxBytes' | 'uploadMaxExpandedBytes'>): UploadLimits {
  return {
    maxUploadBytes: c.uploadMaxBytes,
    maxFiles: 256,
    maxFileBytes: c.uploadMaxExpandedBytes,
    maxTotalBytes: c.uploadMaxExpandedBytes,
    maxRatio: 100,
  };
}

export const DEFAULT_UPLOAD_LIMITS: UploadLimits = uploadLimits(CONSOLE_DEFAULTS);

export interface UploadConfig {
  readonly stagingDir: string;
  readonly modelRepo: string;
  readonly limits: UploadLimits;
  /** Compiles the staged bundle before it is installed (trial-compile.ts); absent: no trial. */
  readonly trialCompile?: (bundleDir: string) => Promise<void>;
}

const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const notFound = (id: string) => new ServeError('HLO_ERR_NOT_FOUND', `no upload '${id}'`);

export class UploadService {
  readonly #store: Store;
  readonly #cfg: UploadConfig;
  readonly #now: () => number;
  /** One chunk or completion at a time per upload. */
  readonly #busy = new Set<string>();

  constructor(store: Store, cfg: UploadConfig, now: () => number = Date.now) {
    this.#store = store;
    this.#cfg = cfg;
    this.#now = now;
  }

  #part(id: string): string {
    return join(this.#cfg.stagingDir, `${id}.part`);
  }

  async create(o: {
    filename: string;
    model: string;
    sizeBytes: number;
    sha256?: string;
    by: string;
  }): Promise<UploadRow> {
    if (formatOf(o.filename) === null)
      throw new ServeError('HLO_ERR_INVALID_ARGUMENT', `filename: '${o.filename}' is not .tar, .tar.gz, .tgz or .zip`);
    if (!MODEL_NAME.test(o.model))
      throw new ServeError('HLO_ERR_INVALID_ARGUMENT', `model: '${o.model}' is not a valid model name`);
    if (o.sizeBytes > this.#cfg.limits.maxUploadBytes)
      throw new ServeError(
        'HLO_ERR_MESSAGE_TOO_LARGE',
        `sizeBytes: over the ${this.#cfg.limits.maxUploadBytes}-byte upload limit`,
      );
    const id = randomBytes(8).toString('hex');
    await mkdir(this.#cfg.stagingDir, { recursive: true, mode: 0o700 });
    await writeFile(this.#part(id), new Uint8Array(0), { mode: 0o600 });
    const now = this.#now();
    const row: UploadRow = {
      id,
      createdAt: now,
      createdBy: o.by,
      filename: o.filename,
      model: o.model,
      sizeBytes: o.sizeBytes,
      offsetBytes: 0,
      sha256: o.sha256?.toLowerCase() ?? null,
      state: 'receiving',
      error: null,
      updatedAt: now,
    };
    await this.#store.insertUpload(row);
    return row;
  }

  async get(id: string): Promise<UploadRow> {
    const row = await this.#store.upload(id);
    if (!row) throw notFound(id);
    return row;
  }

  /** Writes one chunk at `offset`, which must be where the upload stands. */
  async append(id: string, offset: number, chunk: Buffer): Promise<UploadRow> {
    return this.#exclusive(id, async () => {
      const row = await this.get(id);
      if (row.state !== 'receiving')
        throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `upload ${id} is ${row.state}`);
      if (offset !== row.offsetBytes)
        throw new ServeError(
          'HLO_ERR_FAILED_PRECONDITION',
          `Upload-Offset ${offset} does not match the upload's offset ${row.offsetBytes}`,
        );
      if (offset + chunk.length > row.sizeBytes)
        throw new ServeError(
          'HLO_ERR_INVALID_ARGUMENT',
          `chunk ends at ${offset + chunk.length}, past the declared size ${row.sizeBytes}`,
        );
      const fh = await open(this.#part(id), 'r+');
      try {
        // A chunk cut off before being recorded left bytes past the offset: write over them.
        await fh.truncate(offset);
        await fh.write(chunk, 0, chunk.length, offset);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await this.#store.updateUpload(id, { offsetBytes: offset + chunk.length, updatedAt: this.#now() });
      return this.get(id);
    });
  }

  /** Validates and installs. On any refusal the upload is `rejected` with the reason, and the repository is untouched. */
  async complete(id: string, o: { allowHooks: boolean }): Promise<UploadRow> {
    return this.#exclusive(id, async () => {
      const row = await this.get(id);
      if (row.state !== 'receiving')
        throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `upload ${id} is ${row.state}`);
      if (row.offsetBytes !== row.sizeBytes)
        throw new ServeError(
          'HLO_ERR_FAILED_PRECONDITION',
          `upload ${id} has ${row.offsetBytes} of ${row.sizeBytes} bytes`,
        );
      const work = join(this.#cfg.stagingDir, `${id}.d`);
      try {
        await this.#store.updateUpload(id, { state: 'validating', updatedAt: this.#now() });
        const sha = await sha256File(this.#part(id));
        if (row.sha256 !== null && sha !== row.sha256)
          throw new ServeError('HLO_ERR_BUNDLE_INVALID', `sha256: the upload's is ${sha}, ${row.sha256} was declared`);
        // The archive's files land under names of our own, then take theirs once all are checked.
        // '.entries' cannot be a model's name (those start with a letter or digit).
        const extracted = directorySink(join(work, '.entries'));
        await mkdir(join(work, '.entries'), { recursive: true, mode: 0o700 });
        const handle = await open(this.#part(id), 'r');
        let entries;
        try {
          entries = await readArchive(
            fileSource(handle, row.sizeBytes),
            formatOf(row.filename)!,
            this.#cfg.limits,
            extracted,
          );
        } finally {
          await handle.close();
        }
        const staged = join(work, row.model);
        await mkdir(staged, { recursive: true, mode: 0o700 });
        for (const [name, e] of bundleFiles(entries, o)) await rename(extracted.path(e.index), join(staged, name));
        await loadBundle(staged);
        await this.#store.updateUpload(id, { state: 'compiling', updatedAt: this.#now() });
        await this.#cfg.trialCompile?.(staged);
        await this.#install(id, staged, row.model);
        await this.#store.updateUpload(id, { state: 'installed', sha256: sha, updatedAt: this.#now() });
      } catch (err) {
        const e =
          err instanceof ServeError
            ? err
            : new ServeError('HLO_ERR_BUNDLE_INVALID', (err as Error).message, { cause: err });
        await this.#store.updateUpload(id, { state: 'rejected', error: e.message, updatedAt: this.#now() });
        throw e;
      } finally {
        await rm(work, { recursive: true, force: true });
        await rm(this.#part(id), { force: true });
      }
      return this.get(id);
    });
  }

  async cancel(id: string): Promise<UploadRow> {
    return this.#exclusive(id, async () => {
      const row = await this.get(id);
      if (row.state !== 'receiving')
        throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `upload ${id} is ${row.state}`);
      await rm(this.#part(id), { force: true });
      await this.#store.updateUpload(id, { state: 'cancelled', updatedAt: this.#now() });
      return this.get(id);
    });
  }

  async #install(id: string, staged: string, model: string): Promise<void> {
    const repo = this.#cfg.modelRepo;
    // Moved beside the target first (the repository's filesystem), so the switch itself is a
    // rename: by a rename where the staging directory is on that filesystem too (no second copy of
    // a multi-GB bundle), else by a copy.
    const incoming = join(repo, `.upload-${id}`);
    try {
      await rename(staged, incoming);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
      try {
        await cp(staged, incoming, { recursive: true, errorOnExist: true, force: false });
      } catch (copyErr) {
        await rm(incoming, { recursive: true, force: true });
        throw copyErr;
      }
    }
    const target = join(repo, model);
    const exists = await stat(target).then(
      () => true,
      () => false,
    );
    if (exists) await rename(target, join(repo, `.${model}.previous-${this.#now()}`));
    await rename(incoming, target);
  }

  async #exclusive<T>(id: string, fn: () => Promise<T>): Promise<T> {
    if (this.#busy.has(id))
      throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `upload ${id} is busy with another request`);
    this.#busy.add(id);
    try {
      return await fn();
    } finally {
      this.#busy.delete(id);
    }
  }
}

function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (d) => h.update(d))
      .on('error', reject)
      .on('end', () => resolve(h.digest('hex')));
  });
}
