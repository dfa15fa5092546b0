import type { NodeConfig } from '../config/types.js';

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
