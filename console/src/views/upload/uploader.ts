/**
 * A resumable bundle upload against the control API: create (POST /uploads), send chunks
 * (PATCH /uploads/:id with Upload-Offset), complete (validate, install, load), or cancel (DELETE).
 * After a failed chunk it asks the server where it stands (GET /uploads/:id) and resumes from
 * there, so a dropped connection costs one chunk, not the whole archive.
 */
export interface UploadRow {
  readonly id: string;
  readonly filename: string;
  readonly model: string;
  readonly sizeBytes: number;
  readonly offsetBytes: number;
  readonly sha256: string | null;
  readonly state: 'receiving' | 'validating' | 'installed' | 'rejected' | 'cancelled';
  readonly error: string | null;
}

/** What the uploader needs from the network; the browser's is in Upload.tsx, tests pass a fake. */
export interface UploadTransport {
  create(body: { filename: string; model: string; sizeBytes: number }, signal: AbortSignal): Promise<UploadRow>;
  sendChunk(id: string, offset: number, chunk: Blob, signal: AbortSignal): Promise<UploadRow>;
  status(id: string, signal: AbortSignal): Promise<UploadRow>;
  complete(id: string, load: boolean, signal: AbortSignal): Promise<UploadRow>;
  cancel(id: string): Promise<unknown>;
}

export type UploadStep = 'uploading' | 'validating' | 'done' | 'failed' | 'cancelled';

export interface UploadProgress {
  readonly step: UploadStep;
  readonly sentBytes: number;
  readonly totalBytes: number;
  readonly bytesPerSecond: number | null;
  readonly etaSeconds: number | null;
  readonly error: string | null;
  readonly row: UploadRow | null;
}

export interface UploadOptions {
  readonly chunkBytes?: number;
  readonly maxRetries?: number;
  readonly load?: boolean;
  readonly now?: () => number;
}

export async function runUpload(
  file: Blob & { readonly name: string },
  model: string,
  transport: UploadTransport,
  onProgress: (p: UploadProgress) => void,
  signal: AbortSignal,
  o: UploadOptions = {},
): Promise<UploadProgress> {
  const chunkBytes = o.chunkBytes ?? 8 * 2 ** 20;
  const maxRetries = o.maxRetries ?? 3;
  const now = o.now ?? (() => performance.now());
  const total = file.size;
  let row: UploadRow | null = null;
  let last: UploadProgress = {
    step: 'uploading',
    sentBytes: 0,
    totalBytes: total,
    bytesPerSecond: null,
    etaSeconds: null,
    error: null,
    row,
  };
  const emit = (patch: Partial<UploadProgress>) => {
    last = { ...last, ...patch, row };
    onProgress(last);
    return last;
  };
  const started = now();
  try {
    row = await transport.create({ filename: file.name, model, sizeBytes: total }, signal);
    let offset = row.offsetBytes;
    let failures = 0;
    while (offset < total) {
      try {
        row = await transport.sendChunk(
          row.id,
          offset,
          file.slice(offset, Math.min(total, offset + chunkBytes)),
          signal,
        );
        offset = row.offsetBytes;
        failures = 0;
      } catch (err) {
        if (signal.aborted || ++failures > maxRetries) throw err;
        // Where does the server stand? Resume from its offset, not ours.
        row = await transport.status(row.id, signal);
        offset = row.offsetBytes;
      }
      const seconds = (now() - started) / 1000;
      const rate = seconds > 0 ? offset / seconds : null;
      emit({ sentBytes: offset, bytesPerSecond: rate, etaSeconds: rate ? (total - offset) / rate : null });
    }
    emit({ step: 'validating', sentBytes: total, etaSeconds: 0 });
    row = await transport.complete(row.id, o.load ?? true, signal);
    if (row.state === 'rejected') return emit({ step: 'failed', error: row.error ?? 'the bundle was rejected' });
    return emit({ step: 'done' });
  } catch (err) {
    if (signal.aborted) {
      if (row) await transport.cancel(row.id).catch(() => undefined);
      return emit({ step: 'cancelled' });
    }
    return emit({ step: 'failed', error: (err as Error).message });
  }
}

/** A model name from an archive's file name: "resnet.tar.gz" -> "resnet". */
export function modelNameFrom(filename: string): string {
  return filename.replace(/\.(tar\.gz|tgz|tar|zip)$/i, '').replace(/[^A-Za-z0-9._-]/g, '-');
}
