/** A control app over a real Worker (the CPU plugin, the example mlp) and a real SQLite store. */
import { mkdtempSync, rmSync } from 'node:fs';
import { after, before } from 'node:test';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultConfig, workerSettings } from '../../src/config/node-config.js';
import type { WorkerSettings } from '../../src/config/types.js';
import { buildControlApp, type ControlApp } from '../../src/control/api/control-app.js';
import type { ControlOptions } from '../../src/control/api/context.js';
import { WorkerModelPort } from '../../src/control/api/worker-model-port.js';
import { createLogger } from '../../src/log.js';
import { openStore, type Store } from '../../src/state/index.js';
import { Worker } from '../../src/worker/worker.js';

export const examples = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..', '..', 'examples', 'models');
export const log = createLogger('silent');

export function mlpSettings(): WorkerSettings {
  const s = workerSettings(defaultConfig(examples));
  return { ...s, modelsInclude: ['mlp'], modelControlMode: 'explicit' };
}

export const startMlpWorker = (settings = mlpSettings()): Promise<Worker> =>
  Worker.start({ modelRepo: examples, settings, log });

export const tempDir = (): string => mkdtempSync(join(tmpdir(), 'hloserve-control-'));

export interface Harness {
  readonly control: ControlApp;
  readonly store: Store;
  readonly port: WorkerModelPort;
  close(): Promise<void>;
}

export async function startControl(
  worker: Worker,
  dir: string,
  o: { now?: () => number; feed?: Partial<ControlOptions['feed']>; settings?: WorkerSettings } = {},
): Promise<Harness> {
  const store = await openStore({ cacheDir: dir });
  const port = new WorkerModelPort(worker, o.settings ?? mlpSettings());
  const control = await buildControlApp({
    port,
    store,
    log,
    now: o.now,
    metricIntervalMs: 0,
    options: {
      setupTokenFile: join(dir, 'console-setup-token'),
      allowedOrigins: ['https://console.example'],
      feed: { sampleMs: 60_000, heartbeatMs: 60_000, highWaterBytes: 64 * 1024, ...o.feed },
    },
  });
  return {
    control,
    store,
    port,
    close: async () => {
      await control.close();
      await store.close();
    },
  };
}

/** Exchanges the setup token and returns the admin token. */
export async function adminToken(h: Harness): Promise<string> {
  const res = await h.control.app.inject({
    method: 'POST',
    url: '/api/v1/setup',
    payload: { setupToken: h.control.setupToken, name: 'first admin' },
  });
  if (res.statusCode !== 201) throw new Error(`setup failed: ${res.body}`);
  return (res.json() as { data: { token: string } }).data.token;
}

export async function mint(
  h: Harness,
  admin: string,
  scope: string,
  ttlSeconds?: number,
): Promise<{ token: string; id: string }> {
  const res = await h.control.app.inject({
    method: 'POST',
    url: '/api/v1/tokens',
    headers: { authorization: `Bearer ${admin}` },
    payload: { name: `${scope} token`, scope, ...(ttlSeconds ? { ttlSeconds } : {}) },
  });
  if (res.statusCode !== 201) throw new Error(`mint failed: ${res.body}`);
  const d = (res.json() as { data: { token: string; tokenInfo: { id: string } } }).data;
  return { token: d.token, id: d.tokenInfo.id };
}

/** One batch-1 request to the example mlp (or a copy under another name), straight into the Worker. */
export function inferMlp(worker: Worker, id = '', modelName = 'mlp'): ReturnType<Worker['infer']> {
  const x = new Float32Array(784).fill(0.25);
  return worker.infer(
    {
      modelName,
      modelVersion: '',
      id,
      parameters: {},
      inputs: [
        {
          name: 'x',
          datatype: 'FP32',
          shape: [1, 784],
          parameters: {},
          data: { kind: 'raw', bytes: new Uint8Array(x.buffer) },
        },
      ],
      outputs: [],
    },
    { deadline: null, signal: new AbortController().signal },
  );
}

export interface MlpControl {
  worker: Worker;
  h: Harness;
  admin: string;
}

/**
 * Registers before/after hooks in the calling suite: a Worker serving mlp, a control app over it
 * with SQLite in a temp dir, and the admin token. The fields are set once `before` has run.
 */
export function mlpControlFixture(): MlpControl {
  const f = {} as MlpControl;
  let dir: string | undefined;
  before(async () => {
    dir = tempDir();
    f.worker = await startMlpWorker();
    f.h = await startControl(f.worker, dir);
    f.admin = await adminToken(f.h);
  });
  after(async () => {
    await f.h?.close();
    await f.worker?.stop(false);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return f;
}
