/**
 * The scheduler with models named by string, for tests that drive it without a registry: a
 * name -> ModelQueue map stands where the worker's registry keeps each slot's queue.
 */
import { ServeError } from '@hloserve/common/errors';
import type { ExecutionLease } from '../../src/scheduler/executor.js';
import type { ModelPolicyPatch, ModelSchedulingInfo } from '../../src/scheduler/model-info.js';
import type { ModelSchedulingStats } from '../../src/scheduler/model-counters.js';
import {
  Scheduler as QueueScheduler,
  type ModelQueue,
  type SchedulerOptions,
  type SubmitOptions,
} from '../../src/scheduler/scheduler.js';
import type { HostTensor } from '../../src/tensor.js';

type ByQueue = 'addModel' | 'replaceModel' | 'renameModel' | 'updateModel' | 'removeModel' | 'seedCost' | 'submit';
type ByQueueOrName = 'pendingRequests' | 'queueDepth' | 'stats';

export type NamedScheduler<L extends ExecutionLease = ExecutionLease, V = unknown> = Omit<
  QueueScheduler<L, V>,
  ByQueue | ByQueueOrName
> & {
  addModel(info: ModelSchedulingInfo, version?: V): void;
  replaceModel(info: ModelSchedulingInfo, version?: V): void;
  renameModel(from: string, to: string, info: ModelSchedulingInfo, version?: V): void;
  updateModel(name: string, patch: ModelPolicyPatch): void;
  removeModel(name: string): boolean;
  seedCost(name: string, batchSize: number, seconds: number): void;
  submit(name: string, inputs: readonly HostTensor[], options?: SubmitOptions<V>): Promise<HostTensor[]>;
  pendingRequests(name: string): number;
  queueDepth(name: string): number;
  stats(name: string): ModelSchedulingStats | undefined;
  hasModel(name: string): boolean;
  queueOf(name: string): ModelQueue;
};

function named<L extends ExecutionLease, V>(s: QueueScheduler<L, V>): NamedScheduler<L, V> {
  const queues = new Map<string, ModelQueue>();
  const need = (name: string): ModelQueue => {
    const q = queues.get(name);
    if (q === undefined) throw new ServeError('HLO_ERR_MODEL_NOT_FOUND', `unknown model '${name}'`);
    return q;
  };
  const byName: Record<string, unknown> = {
    addModel(info: ModelSchedulingInfo, version?: V): void {
      if (queues.has(info.name))
        throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `model '${info.name}' is already scheduled`);
      queues.set(info.name, s.addModel(info, version));
    },
    replaceModel: (info: ModelSchedulingInfo, version?: V) => s.replaceModel(need(info.name), info, version),
    renameModel(from: string, to: string, info: ModelSchedulingInfo, version?: V): void {
      const q = need(from);
      if (queues.has(to)) throw new ServeError('HLO_ERR_FAILED_PRECONDITION', `model '${to}' is already scheduled`);
      s.renameModel(q, { ...info, name: to }, version);
      queues.delete(from);
      queues.set(to, q);
    },
    updateModel: (name: string, patch: ModelPolicyPatch) => s.updateModel(need(name), patch),
    removeModel(name: string): boolean {
      const q = queues.get(name);
      if (q === undefined) return false;
      queues.delete(name);
      return s.removeModel(q);
    },
    seedCost: (name: string, b: number, seconds: number) => s.seedCost(need(name), b, seconds),
    submit: (name: string, inputs: readonly HostTensor[], options?: SubmitOptions<V>) =>
      s.submit(queues.get(name) ?? null, inputs, options),
    pendingRequests: (name: string) => (queues.has(name) ? s.pendingRequests(need(name)) : 0),
    queueDepth: (name: string) => (queues.has(name) ? s.queueDepth(need(name)) : 0),
    stats: (name: string) => s.stats(queues.get(name) ?? null),
    hasModel: (name: string) => queues.has(name),
    queueOf: need,
  };
  return new Proxy(s, {
    get(target, prop) {
      if (typeof prop === 'string' && prop in byName) return byName[prop];
      // Private fields need the real scheduler as `this`.
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as unknown as NamedScheduler<L, V>;
}

/** `new Scheduler(options)` with the string-named API above. */
export const Scheduler = function <L extends ExecutionLease = ExecutionLease, V = unknown>(
  options: SchedulerOptions<L, V>,
): NamedScheduler<L, V> {
  return named(new QueueScheduler<L, V>(options));
} as unknown as new <L extends ExecutionLease = ExecutionLease, V = unknown>(
  options: SchedulerOptions<L, V>,
) => NamedScheduler<L, V>;
