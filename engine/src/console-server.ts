import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { WorkerSettings } from './config/types.js';
import { buildControlApp, type ControlApp } from './control/api/control-app.js';
import { WorkerModelPort } from './control/api/worker-model-port.js';
import type { ControlService } from './control/control-service.js';
import type { Logger } from './log.js';
import type { TlsMaterial } from './tls/tls-material.js';
import { trialCompiler } from './control/uploads/trial-compile.js';
import { uploadLimits } from './control/uploads/upload-service.js';
import { openStore } from './state/open-store.js';
import type { Worker } from './worker/worker.js';

export interface ConsoleServer {
  readonly app: FastifyInstance;
  readonly control: ControlApp;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The console's listener: the control API (REST + the live feed) and the console's files. The
 * operations store is SQLite under cache_dir, or PostgreSQL when `console.state_url` (or
 * HLOSERVE_STATE_URL, which overrides it) names one.
 */
export async function startConsoleServer(
  worker: Worker,
  facade: ControlService,
  modelRepo: string,
  settings: WorkerSettings,
  host: string,
  port: number,
  log: Logger,
  tls: TlsMaterial | null = null,
  workerName = 'worker0',
): Promise<ConsoleServer> {
  const store = await openStore({ url: settings.console.stateUrl, cacheDir: settings.cacheDir });
  let control: ControlApp | undefined;
  try {
    control = await buildControlApp({
      port: new WorkerModelPort(worker, settings, facade, workerName),
      store,
      log,
      options: {
        setupTokenFile: join(settings.cacheDir, 'console-setup-token'),
        allowedOrigins: settings.console.allowedOrigins,
        tls,
        feed: { sampleMs: 250, heartbeatMs: 15_000, highWaterBytes: 1 << 20 },
        uploads: {
          stagingDir: join(settings.cacheDir, 'uploads'),
          modelRepo,
          limits: uploadLimits(settings.console),
          trialCompile: trialCompiler(worker.runtime),
        },
      },
    });
    if (control.setupToken !== null)
      log.warn('console setup: exchange this one-time token for an admin token (POST /api/v1/setup)', {
        setupToken: control.setupToken,
        file: join(settings.cacheDir, 'console-setup-token'),
        url: `${tls ? 'https' : 'http'}://${host}:${port}/#setup=${control.setupToken}`,
      });
    await control.app.listen({ host, port });
  } catch (err) {
    await control?.close();
    await store.close();
    throw err;
  }
  const c = control;
  worker.metrics.trackFeedClients(() => c.context.hub.clientCount);
  return {
    app: c.app,
    control: c,
    port: (c.app.server.address() as { port: number }).port,
    close: async () => {
      await c.close();
      await store.close();
    },
  };
}
