/** The gateway's own counters, exposed in Prometheus text. */
import type { ModelPlacement } from './placement/lpt-packing.js';

export class GatewayMetrics {
  readonly requests = new Map<string, number>();
  inFlight = 0;
  shed = 0;
  retries = 0;
  /** Calls cut off mid-way on a worker: answered UNAVAILABLE, not re-sent. */
  dropped = 0;
  private latencySum = 0;
  private latencyCount = 0;

  /**
   * The label text of each (protocol, code, model), made once and found without building a string:
   * count() runs on every request, and its arguments are strings whose hashes are already known.
   */
  private readonly keys = new Map<string, Map<string, Map<string, string>>>();

  count(protocol: string, model: string, code: string, seconds: number): void {
    let byCode = this.keys.get(protocol);
    if (byCode === undefined) this.keys.set(protocol, (byCode = new Map()));
    let byModel = byCode.get(code);
    if (byModel === undefined) byCode.set(code, (byModel = new Map()));
    let key = byModel.get(model);
    if (key === undefined) {
      key = `protocol="${protocol}",model="${model.replace(/["\\\n]/g, '_')}",code="${code}"`;
      byModel.set(model, key);
    }
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
    this.latencySum += seconds;
    this.latencyCount++;
  }

  render(state: {
    maxInFlight: number;
    workers: { name: string; ready: boolean; outstanding: number }[];
    placement: ReadonlyMap<string, ModelPlacement>;
    routes: number;
    repacks: number;
    reweighs: number;
    joins: number;
    measuredSpread: number;
    replicaFactors: ReadonlyMap<string, ReadonlyMap<string, number>>;
    workerFactors: ReadonlyMap<string, number>;
    workerDebts: ReadonlyMap<string, number>;
  }): string {
    const l: string[] = [];
    l.push('# HELP hloserve_gateway_requests_total Requests answered by the gateway, by protocol, model and status.');
    l.push('# TYPE hloserve_gateway_requests_total counter');
    for (const [k, v] of this.requests) l.push(`hloserve_gateway_requests_total{${k}} ${v}`);
    l.push('# HELP hloserve_gateway_request_seconds Time from arrival to answer at the gateway.');
    l.push('# TYPE hloserve_gateway_request_seconds summary');
    l.push(`hloserve_gateway_request_seconds_sum ${this.latencySum}`);
    l.push(`hloserve_gateway_request_seconds_count ${this.latencyCount}`);
    l.push('# HELP hloserve_gateway_inflight_requests Requests inside the gateway now.');
    l.push('# TYPE hloserve_gateway_inflight_requests gauge');
    l.push(`hloserve_gateway_inflight_requests ${this.inFlight}`);
    l.push('# HELP hloserve_gateway_max_inflight_requests The inbound in-flight cap.');
    l.push('# TYPE hloserve_gateway_max_inflight_requests gauge');
    l.push(`hloserve_gateway_max_inflight_requests ${state.maxInFlight}`);
    l.push('# HELP hloserve_gateway_requests_shed_total Requests refused at the inbound cap.');
    l.push('# TYPE hloserve_gateway_requests_shed_total counter');
    l.push(`hloserve_gateway_requests_shed_total ${this.shed}`);
    l.push('# HELP hloserve_gateway_retries_total Requests sent to another replica after one could not run them.');
    l.push('# TYPE hloserve_gateway_retries_total counter');
    l.push(`hloserve_gateway_retries_total ${this.retries}`);
    l.push(
      '# HELP hloserve_gateway_dropped_total Calls cut off mid-way by a worker failure (answered UNAVAILABLE, not re-sent).',
    );
    l.push('# TYPE hloserve_gateway_dropped_total counter');
    l.push(`hloserve_gateway_dropped_total ${this.dropped}`);
    l.push('# HELP hloserve_gateway_worker_ready Whether a worker answered ready on the last health round.');
    l.push('# TYPE hloserve_gateway_worker_ready gauge');
    for (const w of state.workers) l.push(`hloserve_gateway_worker_ready{worker="${w.name}"} ${w.ready ? 1 : 0}`);
    l.push('# HELP hloserve_gateway_worker_outstanding Requests the gateway has in flight on a worker.');
    l.push('# TYPE hloserve_gateway_worker_outstanding gauge');
    for (const w of state.workers) l.push(`hloserve_gateway_worker_outstanding{worker="${w.name}"} ${w.outstanding}`);
    l.push('# HELP hloserve_gateway_placement Model replicas placed on a worker by lpt_packing (1 = placed).');
    l.push('# TYPE hloserve_gateway_placement gauge');
    for (const [m, p] of state.placement)
      for (const w of p.workers) l.push(`hloserve_gateway_placement{model="${m}",worker="${w}"} 1`);
    l.push(
      "# HELP hloserve_gateway_placement_weight Share of a model's requests (items) the router sends to a replica.",
    );
    l.push('# TYPE hloserve_gateway_placement_weight gauge');
    for (const [m, p] of state.placement)
      p.workers.forEach((w, i) =>
        l.push(`hloserve_gateway_placement_weight{model="${m}",worker="${w}"} ${p.weights[i] ?? 0}`),
      );
    l.push('# HELP hloserve_gateway_routed_models Models in the routing table.');
    l.push('# TYPE hloserve_gateway_routed_models gauge');
    l.push(`hloserve_gateway_routed_models ${state.routes}`);
    l.push('# HELP hloserve_gateway_repacks_total Placements computed from measured load.');
    l.push('# TYPE hloserve_gateway_repacks_total counter');
    l.push(`hloserve_gateway_repacks_total ${state.repacks}`);
    l.push(
      '# HELP hloserve_gateway_reweighs_total Polls that re-derived replica weights from measured load between repacks.',
    );
    l.push('# TYPE hloserve_gateway_reweighs_total counter');
    l.push(`hloserve_gateway_reweighs_total ${state.reweighs}`);
    l.push(
      '# HELP hloserve_gateway_spread_joins_total Replicas added because the measured spread was over its threshold between workers no split model joined.',
    );
    l.push('# TYPE hloserve_gateway_spread_joins_total counter');
    l.push(`hloserve_gateway_spread_joins_total ${state.joins}`);
    l.push(
      "# HELP hloserve_gateway_measured_spread The busiest worker's device time over the mean, over the last span of fleet compute (1 before any).",
    );
    l.push('# TYPE hloserve_gateway_measured_spread gauge');
    l.push(`hloserve_gateway_measured_spread ${state.measuredSpread}`);
    l.push(
      "# HELP hloserve_gateway_replica_cost_factor A replica's measured device time over what its share of the model's load predicted (the re-weigh's feedback; 1 = as predicted).",
    );
    l.push('# TYPE hloserve_gateway_replica_cost_factor gauge');
    for (const [m, row] of state.replicaFactors)
      for (const [w, f] of row) l.push(`hloserve_gateway_replica_cost_factor{model="${m}",worker="${w}"} ${f}`);
    l.push(
      "# HELP hloserve_gateway_worker_load_factor The re-weigh's integral correction of a worker's predicted load from its measured device time against its group's mean (1 = none).",
    );
    l.push('# TYPE hloserve_gateway_worker_load_factor gauge');
    for (const [w, f] of state.workerFactors) l.push(`hloserve_gateway_worker_load_factor{worker="${w}"} ${f}`);
    l.push(
      "# HELP hloserve_gateway_worker_device_debt_seconds A worker's device time beyond its group's mean, fading with fleet work, which the re-weigh pays back through split weights.",
    );
    l.push('# TYPE hloserve_gateway_worker_device_debt_seconds gauge');
    for (const [w, d] of state.workerDebts) l.push(`hloserve_gateway_worker_device_debt_seconds{worker="${w}"} ${d}`);
    return l.join('\n') + '\n';
  }
}
