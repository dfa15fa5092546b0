import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { WorkerSettings } from './config/types.js';
import type { ConsoleServer } from './console-server.js';
import { ControlService } from './control/control-service.js';
import type { GrpcServerHandle } from './transports/grpc-server.js';
import type { Logger } from './log.js';
import { closeServer } from '@hloserve/common/idle-connections';
import { loadTlsMaterial } from './tls/tls-material.js';
import { Worker } from './worker/worker.js';

export interface RunningServer {
  readonly worker: Worker;
  /** The control facade (also served as ControlService on the gRPC port). */
  readonly control: ControlService;
  readonly ports: { readonly grpc: number; readonly http: number; readonly metrics: number; readonly console: number };
  /** Stops listening, drains queued and in-flight requests, frees the device. */
  stop(drain?: boolean): Promise<void>;
}

/** How often a stop that is still waiting says on what. */
const STOP_REPORT_MS = 10_000;

/** Starts a worker and every listener of DESIGN.md's small deployment (gRPC, HTTP, metrics, console). */
export async function serve(
  modelRepo: string,
  settings: WorkerSettings,
  log: Logger,
  /** The worker's name in node.yaml (the supervisor's and gateway's name for it), shown by the console. */
  workerName = 'worker0',
): Promise<RunningServer> {
  // Checked before any model compiles: a bad certificate should stop the start at once.
  const tls = settings.endpoints.tls ? loadTlsMaterial(settings.endpoints.tls) : null;
  // The KServe listeners and the console open while the startup set loads (health says not ready
  // until it has); the console applies each model's stored policy as that model loads.
  const ep = settings.endpoints;
  const begun = Worker.begin({ modelRepo, settings, log });
  // The listeners' modules (gRPC, Fastify, metrics) likewise load while the runtime starts.
  const listenerModules = Promise.all([
    import('./transports/grpc-server.js'),
    import('./transports/http-server.js'),
    import('./transports/metrics-server.js'),
    import('./control/control-grpc.js'),
  ]);
  listenerModules.catch(() => undefined);
  const { worker, loaded, dispatched } = await begun;
  // The console's modules (its web server, state database, migrations) are imported once the
  // models' loads have handed their modules to the compiler (Worker.loadRepository): importing
  // them holds the JS thread for long stretches, and the loads need it only briefly between steps
  // that run on other threads.
  const consoleModule = ep.consolePort >= 0 ? dispatched.then(() => import('./console-server.js')) : null;
  consoleModule?.catch(() => undefined);
  // Observed now, awaited below: a repository that cannot be read fails the start.
  const startup = loaded.then(
    () => null,
    (err: unknown) => err,
  );
  const control = new ControlService(worker);
  const consoleStart = consoleModule
    ? consoleModule.then((m) =>
        m.startConsoleServer(worker, control, modelRepo, settings, ep.host, ep.consolePort, log, tls, workerName),
      )
    : Promise.resolve(undefined);
  // Observed now, awaited below (or on the way out, to close what it opened).
  const consoleStarted = consoleStart.then(
    (c) => ({ c, err: null }),
    (err: unknown) => ({ c: undefined, err }),
  );
  let grpc: GrpcServerHandle | undefined;
  let http: FastifyInstance | undefined;
  let metrics: { server: Server; port: number } | undefined;
  let consoleSrv: ConsoleServer | undefined;
  try {
    const [{ startGrpcServer }, { buildHttpServer }, { startMetricsServer }, { addControlService }] =
      await listenerModules;
    // Started once the models' loads have handed their modules to the compiler, as the console is:
    // building the servers holds the JS thread, and the loads' file reads would wait for it.
    await dispatched;
    grpc = await startGrpcServer(worker, ep.host, ep.grpcPort, (server) => addControlService(server, control), tls);
    http = buildHttpServer(worker, {
      maxJsonBytes: ep.maxJsonBytes,
      requestTimeoutMs: ep.httpRequestTimeoutSeconds * 1000,
      headersTimeoutMs: ep.httpHeadersTimeoutSeconds * 1000,
      tls,
    });
    await http.listen({ host: ep.host, port: ep.httpPort });
    const httpPort = (http.server.address() as { port: number }).port;
    metrics = ep.metricsPort >= 0 ? await startMetricsServer(worker, ep.host, ep.metricsPort, tls) : undefined;
    const started = await consoleStarted;
    consoleSrv = started.c;
    if (started.err !== null) throw started.err;
    const failed = await startup;
    if (failed !== null) throw failed;
    // Ready once every model of the startup set runs under its stored policy.
    await consoleSrv?.control.context.desired.settled();
    const ports = { grpc: grpc.port, http: httpPort, metrics: metrics?.port ?? -1, console: consoleSrv?.port ?? -1 };
    log.info('listening', {
      host: ep.host,
      ...ports,
      tls: tls !== null,
      models: worker.repositoryIndex(true).map((m) => m.name),
    });
    worker.prestartHookThreads();
    let stopping: Promise<void> | null = null;
    /** A second stop without drain while a draining one waits: what it waits for goes now. */
    const hurry = (): void => {
      log.warn('stopping without waiting: queued requests and hook calls fail, open connections are closed');
      worker.hurryStop();
      void grpc?.close(0);
      http?.server.closeAllConnections();
      consoleSrv?.app.server.closeAllConnections();
      metrics?.server.closeAllConnections();
    };
    return {
      worker,
      control,
      ports,
      stop: (drain = true) => {
        if (!drain && stopping !== null) hurry();
        return (stopping ??= (async () => {
          // What the stop still waits for, named in a warning every STOP_REPORT_MS while it does.
          const waiting = new Set<string>();
          const step = <T>(name: string, p: Promise<T>): Promise<T> => {
            waiting.add(name);
            return p.finally(() => waiting.delete(name));
          };
          const report = setInterval(
            () => log.warn('shutdown still waiting', { on: [...waiting], stage: worker.stopStage }),
            STOP_REPORT_MS,
          );
          report.unref();
          try {
            // Stop taking new calls first, then let the worker finish what it accepted.
            const closing = Promise.all([
              step('grpc', grpc!.close()),
              step('http', http!.close()),
              step('console', consoleSrv?.close() ?? Promise.resolve()),
            ]);
            await step('worker', worker.stop(drain));
            await closing;
            if (metrics) await step('metrics', closeServer(metrics.server));
          } finally {
            clearInterval(report);
          }
          log.info('stopped');
        })());
      },
    };
  } catch (err) {
    await startup;
    consoleSrv ??= (await consoleStarted).c;
    await grpc?.close(0);
    await http?.close();
    metrics?.server.close();
    await consoleSrv?.close();
    await worker.stop(false);
    throw err;
  }
}
