import { useQueryClient } from '@tanstack/react-query';
import { useRef, useState, type DragEvent } from 'react';
import { apiRequest } from '../../api/http.js';
import { modelKeys } from '../../api/keys.js';
import { routes } from '../../api/routes.js';
import { tokenStore } from '../../api/token-store.js';
import { currentWorker, withWorker } from '../../api/worker-choice.js';
import { canOperate } from '../../app/permissions.js';
import { useSession } from '../../app/session.js';
import { formatBytes } from '../../components/format.js';
import { modelNameFrom, runUpload, type UploadProgress, type UploadRow, type UploadTransport } from './uploader.js';
import { errorFromBody } from '../../api/errors.js';

/**
 * The control API's upload routes, over fetch, all to one worker: the one chosen when the upload
 * started (behind a gateway), even if the operator looks at another meanwhile.
 */
const uploadTransport = (worker: string | null): UploadTransport => ({
  create: async (body, signal) =>
    (await apiRequest<UploadRow>(routes.uploads, { method: 'POST', body, signal, worker })).data,
  sendChunk: async (id, offset, chunk, signal) => {
    // A chunk is raw bytes, not JSON: apiRequest does not fit.
    const token = tokenStore.get();
    const res = await fetch(withWorker(routes.upload(id), worker), {
      method: 'PATCH',
      headers: {
        'content-type': 'application/offset+octet-stream',
        'upload-offset': String(offset),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: chunk,
      signal,
    });
    const body = (await res.json().catch(() => null)) as { data?: UploadRow } | null;
    if (!res.ok || !body?.data) throw errorFromBody(res.status, body);
    return body.data;
  },
  status: async (id, signal) => (await apiRequest<UploadRow>(routes.upload(id), { signal, worker })).data,
  complete: async (id, load, signal) =>
    (await apiRequest<UploadRow>(routes.uploadComplete(id), { method: 'POST', body: { load }, signal, worker })).data,
  cancel: (id) => apiRequest(routes.upload(id), { method: 'DELETE', worker }),
});

const steps = ['upload', 'validate', 'install and load'] as const;

/** Drag a bundle archive (.tar, .tar.gz, .zip): progress, validation, install; cancel at any time. */
export function Upload() {
  const session = useSession();
  const qc = useQueryClient();
  const [file, setFile] = useState<File | null>(null);
  const [model, setModel] = useState('');
  const [load, setLoad] = useState(true);
  const [progress, setProgress] = useState<UploadProgress | null>(null);
  const [over, setOver] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const input = useRef<HTMLInputElement>(null);
  if (!canOperate(session.data?.scope)) {
    return (
      <>
        <h1>Upload</h1>
        <p className="panel muted">Uploading a bundle needs an operator or admin token.</p>
      </>
    );
  }
  const choose = (f: File | undefined) => {
    if (!f) return;
    setFile(f);
    setModel(modelNameFrom(f.name));
    setProgress(null);
  };
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setOver(false);
    choose(e.dataTransfer.files[0]);
  };
  const start = async () => {
    if (!file) return;
    const ac = new AbortController();
    abort.current = ac;
    // The worker and its models' key as they are now: the upload's, whatever is shown when it ends.
    const listKey = modelKeys.list();
    const end = await runUpload(file, model, uploadTransport(currentWorker()), setProgress, ac.signal, { load });
    abort.current = null;
    if (end.step === 'done') void qc.invalidateQueries({ queryKey: listKey });
  };
  const busy = progress?.step === 'uploading' || progress?.step === 'validating';
  const stepIndex = progress ? { uploading: 0, validating: 1, done: 3, failed: -1, cancelled: -1 }[progress.step] : -1;
  const pct = progress && progress.totalBytes ? Math.round((100 * progress.sentBytes) / progress.totalBytes) : 0;
  return (
    <>
      <h1>Upload a bundle</h1>
      <div
        className={`panel dropzone${over ? ' over' : ''}`}
        onDragOver={(e) => {
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={onDrop}
        data-testid="dropzone"
      >
        <p>
          Drop a bundle archive here (<code>.tar</code>, <code>.tar.gz</code>, <code>.zip</code> of a model directory:
          manifest.yaml, model.bN.mlir, weights.safetensors), or{' '}
          <button type="button" onClick={() => input.current?.click()}>
            choose a file
          </button>
          <input
            ref={input}
            type="file"
            accept=".tar,.gz,.tgz,.zip"
            hidden
            onChange={(e) => choose(e.target.files?.[0])}
          />
        </p>
        {file && (
          <p>
            <strong>{file.name}</strong> · {formatBytes(file.size)}
          </p>
        )}
      </div>
      {file && (
        <div className="panel">
          <div className="row" style={{ alignItems: 'flex-end' }}>
            <label className="field">
              Model name
              <input
                value={model}
                onChange={(e) => setModel(e.target.value)}
                disabled={busy}
                data-testid="upload-model"
              />
            </label>
            <label className="row" style={{ gap: 4 }}>
              <input type="checkbox" checked={load} onChange={(e) => setLoad(e.target.checked)} disabled={busy} /> load
              it once installed
            </label>
            <button
              type="button"
              className="primary"
              disabled={busy || model.trim() === ''}
              onClick={() => void start()}
              data-testid="upload-start"
            >
              Upload
            </button>
            {busy && (
              <button type="button" className="danger" onClick={() => abort.current?.abort()}>
                Cancel
              </button>
            )}
          </div>
          {progress && (
            <div style={{ marginTop: 12 }} data-testid="upload-progress" data-step={progress.step}>
              <ol className="steps">
                {steps.map((s, i) => (
                  <li key={s} className={i < stepIndex ? 'done' : i === stepIndex ? 'current' : ''}>
                    {s}
                  </li>
                ))}
              </ol>
              <div className="membar" role="progressbar" aria-valuenow={pct} aria-valuemin={0} aria-valuemax={100}>
                <span style={{ width: `${pct}%`, background: 'var(--accent)' }} />
              </div>
              <p className="muted">
                {formatBytes(progress.sentBytes)} of {formatBytes(progress.totalBytes)}
                {progress.bytesPerSecond !== null && ` · ${formatBytes(progress.bytesPerSecond)}/s`}
                {progress.etaSeconds !== null &&
                  progress.step === 'uploading' &&
                  ` · ${Math.ceil(progress.etaSeconds)} s left`}
              </p>
              {progress.step === 'done' && (
                <p>
                  Installed {progress.row?.model}
                  {load ? ' and loaded' : ''}.
                </p>
              )}
              {progress.step === 'cancelled' && <p className="muted">Cancelled; nothing was installed.</p>}
              {progress.step === 'failed' && (
                <p className="error" role="alert">
                  {progress.error}
                </p>
              )}
            </div>
          )}
        </div>
      )}
    </>
  );
}
