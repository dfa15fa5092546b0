/**
 * The gateway's placement API, as JSON (GET /api/v1/placements): the fleet's models x workers as
 * the gateway builds it (gateway/src/control/placement-view.ts) and the console shows it.
 */

export type RoutingMode = 'round_robin' | 'least_outstanding' | 'lpt_packing';

export interface PlacementCell {
  readonly worker: string;
  /** The router sends this model's traffic here. */
  readonly placed: boolean;
  /**
   * Share of the model's requests the router sends here (0 to 1; 0 where not placed); null where
   * the mode spreads over every holder without weights (round_robin, least_outstanding, or an
   * lpt_packing model not placed yet).
   */
  readonly weight: number | null;
  /** The worker holds the model ready. */
  readonly ready: boolean;
  /** Weights on the worker's device; null when its metrics could not be read. */
  readonly resident: boolean | null;
}

export interface ModelPlacementView {
  readonly name: string;
  readonly desiredReplicas: number;
  /** Workers the router sends traffic to (desired). */
  readonly placed: readonly string[];
  /** Workers where the weights are resident (actual). */
  readonly residentOn: readonly string[];
  /** Placed by an operator (a move) rather than by measured load. */
  readonly pinned: boolean;
  /** Measured utilisation (rate x cost, device-seconds per second), null before any traffic. */
  readonly utilisation: number | null;
  readonly cells: readonly PlacementCell[];
}

export interface WorkerPlacementView {
  readonly name: string;
  readonly ready: boolean;
  /** Whether it has a console port: the console can show its screens (`?worker=NAME`) when ready. */
  readonly console: boolean;
  /** Requests the gateway has in flight there. */
  readonly outstanding: number;
  /** Compute load the last packing charged to the worker (sum of utilisation shares). */
  readonly computeLoad: number | null;
}

export interface PlacementView {
  /** Always true: the answer comes from a gateway (a single worker has no placements route). */
  readonly fleet: true;
  readonly mode: RoutingMode;
  /** Whether replica and move actions apply (lpt_packing only: the other modes use every holder). */
  readonly actions: boolean;
  readonly repacks: number;
  readonly workers: readonly WorkerPlacementView[];
  readonly models: readonly ModelPlacementView[];
}
