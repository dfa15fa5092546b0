/**
 * Query keys, one factory per resource. REST queries and feed messages write the same keys, so
 * there is one cache and no second store. Each key ends with the worker whose data it holds
 * (worker-choice.ts; '' for the default): behind a gateway one worker's answers never show under
 * another's name, and a prefix such as `modelKeys.all` still reaches every worker's copy.
 */
import { workerScope } from './worker-choice.js';

const w = () => workerScope();
export const sessionKeys = { me: (token: string | null) => ['session', token, w()] as const };
export const modelKeys = {
  all: ['models'] as const,
  list: () => [...modelKeys.all, 'list', w()] as const,
  metrics: (name: string) => [...modelKeys.all, 'metrics', name, w()] as const,
  detail: (name: string) => [...modelKeys.all, 'detail', name, w()] as const,
  io: (name: string) => [...modelKeys.all, 'io', name, w()] as const,
  histograms: (name: string) => [...modelKeys.all, 'histograms', name, w()] as const,
  versions: (name: string) => [...modelKeys.all, 'versions', name, w()] as const,
};
export const queueKeys = {
  now: () => ['queues', 'now', w()] as const,
  /** Samples folded from successive GET /queues answers while the screen is open. */
  history: () => ['queues', 'history', w()] as const,
};
export const workerKeys = { list: () => ['workers', 'list', w()] as const };
export const metricsKeys = { state: () => ['metrics', 'state', w()] as const };
export const eventKeys = { list: () => ['events', 'list', w()] as const };
export const auditKeys = { list: () => ['audit', 'list', w()] as const };
export const tokenKeys = { list: () => ['tokens', 'list', w()] as const };
export const settingsKeys = { all: () => ['settings', w()] as const };

/** The feed's topics (GET /api/v1/stream). */
export const topics = {
  models: 'models',
  residency: 'residency',
  queues: 'queues',
  events: 'events',
  metrics: 'metrics',
} as const;
