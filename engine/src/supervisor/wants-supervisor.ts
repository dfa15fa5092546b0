import type { NodeConfig } from '../config/types.js';

/**
 * The name the supervisor gives a worker it starts (worker0, worker1, ... or node.yaml's): the
 * gateway, the logs and the console's worker picker use it, so the worker reports it too.
 */
export const WORKER_NAME_ENV = 'HLOSERVE_WORKER_NAME';

/** The worker's own name: `--worker`, else the supervisor's, else node.yaml's first worker's. */
export function ownWorkerName(config: NodeConfig, flag: string | undefined, env = process.env): string {
  const supervised = env['HLOSERVE_SUPERVISED'] === '1' ? env[WORKER_NAME_ENV] : undefined;
  return flag ?? supervised ?? config.workers[0]?.name ?? 'worker0';
}

/** The part of the serve flags that decides between serving and supervising. */
export interface SupervisorChoice {
  readonly worker?: string;
  readonly workers?: string;
}

/**
 * True when this `serve` starts a supervisor instead of serving itself. Its own module, so the
 * CLI decides without importing the supervisor (and the gateway) on a single worker's start.
 */
export function wantsSupervisor(config: NodeConfig, flags: SupervisorChoice, env = process.env): boolean {
  if (env['HLOSERVE_SUPERVISED'] === '1' || flags.worker !== undefined) return false;
  if (flags.workers !== undefined) return flags.workers === 'auto' || Number(flags.workers) >= 2;
  return config.workers.length >= 2;
}
