/**
 * The gateway on its own, in front of workers anywhere (several hosts):
 *   node gateway/dist/src/cli.js --worker a=10.0.0.5:8001,10.0.0.5:8000,10.0.0.5:8002 --worker b=... \
 *     [--host 0.0.0.0] [--grpc-port 8001] [--http-port 8000] [--metrics-port 8002] [--console-port 8003]
 *     [--routing lpt_packing|least_outstanding|round_robin] [--replicas model=n|all,...]
 *     [--tls-cert server.crt --tls-key server.key [--tls-client-ca clients-ca.crt]]
 *     [--state-url postgres://...|sqlite:PATH [--fleet NAME]]   (as `hloserve gateway ...` only)
 * Each worker is name=GRPC_ADDR,HTTP_ADDR[,METRICS_ADDR[,CONSOLE_ADDR]]. `hloserve serve --workers N` runs the
 * same gateway inside the supervisor. With --tls-cert/--tls-key every listener serves TLS (client
 * certificates signed by --tls-client-ca required when given); the workers are reached in plaintext.
 * --state-url keeps the operator's placement and its audit in the engine's operations store, under
 * --fleet (default: this host's name); the store is the engine's, so that option needs the gateway
 * started as `hloserve gateway`, which hands in a StateOpener. Without it they live in memory.
 */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import type { PlacementState } from './control/placement-state.js';
import { ROUTING_MODES, type RoutingMode } from './routing/router.js';
import { DEFAULT_PLACEMENT } from './placement/placement-controller.js';
import { parseReplicas } from './placement/replicas-flag.js';
import { serveGateway } from './serve-gateway.js';
import type { WorkerSpec } from './fleet.js';
import { gatewayTlsFromFiles, type GatewayTls } from './tls.js';

function parseWorker(spec: string): WorkerSpec {
  const eq = spec.indexOf('=');
  const [grpc, http, metrics, consoleAddr] = spec.slice(eq + 1).split(',');
  if (eq <= 0 || !grpc || !http)
    throw new Error(`--worker expects name=GRPC_ADDR,HTTP_ADDR[,METRICS_ADDR[,CONSOLE_ADDR]], got '${spec}'`);
  return { name: spec.slice(0, eq), address: { grpc, http, metrics: metrics || null, console: consoleAddr || null } };
}

function tlsFrom(cert: string | undefined, key: string | undefined, clientCa: string | undefined): GatewayTls | null {
  if (cert === undefined && key === undefined) {
    if (clientCa !== undefined) throw new Error('--tls-client-ca needs --tls-cert and --tls-key');
    return null;
  }
  if (cert === undefined || key === undefined) throw new Error('--tls-cert and --tls-key go together');
  return gatewayTlsFromFiles(cert, key, clientCa ?? null);
}

const log = (msg: string, f: Record<string, unknown>) =>
  process.stderr.write(
    JSON.stringify({ level: 'info', time: new Date().toISOString(), worker: 'gateway', msg, ...f }) + '\n',
  );

export interface OpenedState {
  readonly state: PlacementState;
  close(): Promise<void>;
}

/** Opens the placement state at `url` for `fleet` (the engine's store, handed in by `hloserve gateway`). */
export type StateOpener = (url: string, fleet: string) => Promise<OpenedState>;

/** Runs the gateway until SIGTERM or SIGINT; resolves with the exit code once it has stopped. */
export async function runGatewayCli(argv: readonly string[], openState?: StateOpener): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      worker: { type: 'string', multiple: true },
      host: { type: 'string', default: '127.0.0.1' },
      'grpc-port': { type: 'string', default: '8001' },
      'http-port': { type: 'string', default: '8000' },
      'metrics-port': { type: 'string', default: '8002' },
      'console-port': { type: 'string', default: '8003' },
      routing: { type: 'string', default: 'lpt_packing' },
      replicas: { type: 'string' },
      'max-inflight': { type: 'string', default: '1024' },
      'worker-max-inflight': { type: 'string', default: '64' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'tls-client-ca': { type: 'string' },
      'state-url': { type: 'string' },
      fleet: { type: 'string' },
    },
  });
  if (values.fleet !== undefined && values['state-url'] === undefined) throw new Error('--fleet needs --state-url');
  if (values['state-url'] !== undefined && !openState)
    throw new Error("--state-url needs the engine's operations store: start the gateway as `hloserve gateway ...`");
  const tls = tlsFrom(values['tls-cert'], values['tls-key'], values['tls-client-ca']);
  const workers = (values.worker ?? []).map(parseWorker);
  if (workers.length === 0) throw new Error('name at least one --worker');
  const mode = values.routing as RoutingMode;
  if (!ROUTING_MODES.includes(mode)) throw new Error(`--routing must be one of ${ROUTING_MODES.join(', ')}`);
  const opened =
    values['state-url'] !== undefined ? await openState!(values['state-url'], values.fleet ?? hostname()) : null;
  let gw;
  try {
    gw = await serveGateway(
      {
        workers,
        mode,
        maxInFlight: Number(values['max-inflight']),
        workerMaxInFlight: Number(values['worker-max-inflight']),
        placement: { ...DEFAULT_PLACEMENT, replicas: parseReplicas(values.replicas) },
        ...(opened ? { state: opened.state } : {}),
      },
      {
        host: values.host,
        grpcPort: Number(values['grpc-port']),
        httpPort: Number(values['http-port']),
        metricsPort: Number(values['metrics-port']),
        consolePort: Number(values['console-port']),
        tls,
      },
      (msg, f) => log(msg, f),
    );
  } catch (err) {
    await opened?.close();
    throw err;
  }
  log('listening', {
    host: values.host,
    ...gw.ports,
    tls: tls !== null,
    workers: workers.map((w) => w.name),
    mode,
    placementStore: opened !== null,
  });
  return new Promise<number>((resolve) => {
    const stop = (sig: string) => {
      log('shutting down', { signal: sig });
      void gw
        .stop()
        .then(() => opened?.close())
        .then(() => {
          log('stopped', {});
          resolve(0);
        });
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}
