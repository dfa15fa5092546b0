/**
 * `hloserve serve` with several workers: node.yaml lists two or more, or --workers N|auto. Runs
 * the supervisor until SIGTERM/SIGINT, then drains the gateway and every worker.
 */
import { parseReplicas, ROUTING_MODES, type RoutingMode } from '@hloserve/gateway';
import type { NodeConfig } from '../config/types.js';
import type { Logger } from '../log.js';
import { resolveWorkerDevices } from './devices.js';
import { gatewayTlsFor } from './gateway-tls.js';
import { Supervisor } from './supervisor.js';
export { wantsSupervisor } from './wants-supervisor.js';

export interface SuperviseFlags {
  readonly workers?: string;
  readonly routing?: string;
  readonly basePort?: string;
  readonly replicas?: string;
  readonly spares?: string;
  /** --worker NAME: run one worker of node.yaml, never a supervisor. */
  readonly worker?: string;
}

export async function runSupervisor(
  config: NodeConfig,
  configFile: string | null,
  flags: SuperviseFlags,
  log: Logger,
): Promise<number> {
  // Checked before any worker starts: a bad certificate stops the start at once.
  const tls = gatewayTlsFor(config);
  const mode = (flags.routing ?? 'lpt_packing') as RoutingMode;
  if (!ROUTING_MODES.includes(mode)) throw new Error(`--routing must be one of ${ROUTING_MODES.join(', ')}`);
  const basePort = Number(flags.basePort ?? 8100);
  if (!Number.isInteger(basePort) || basePort < 0 || basePort > 65_000)
    throw new Error(`--base-port: bad port '${flags.basePort}'`);
  const supervisor = new Supervisor({
    config,
    configFile,
    devices: flags.workers !== undefined ? resolveWorkerDevices(flags.workers) : null,
    basePort,
    mode,
    replicas: parseReplicas(flags.replicas),
    spares: Number(flags.spares ?? 0) || 0,
    tls,
    log,
  });
  let stopping: Promise<void> | null = null;
  const onSignal = (sig: NodeJS.Signals) => {
    log.info('shutting down', { signal: sig });
    stopping ??= supervisor.stop();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    await supervisor.start();
  } catch (err) {
    await supervisor.stop();
    throw err;
  }
  await new Promise<void>((resolve) => {
    const wait = () => (stopping ? void stopping.then(resolve) : void setTimeout(wait, 100));
    wait();
  });
  return 0;
}
