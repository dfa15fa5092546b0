/**
 * Query keys, one factory per resource. REST queries and feed messages write the same keys, so
 * there is one cache and no second store.
 */
export const sessionKeys = { me: (token: string | null) => ['session', token] as const };
export const modelKeys = {
  all: ['models'] as const,
  list: () => [...modelKeys.all, 'list'] as const,
  metrics: (name: string) => [...modelKeys.all, 'metrics', name] as const,
  detail: (name: string) => [...modelKeys.all, 'detail', name] as const,
  io: (name: string) => [...modelKeys.all, 'io', name] as const,
  histograms: (name: string) => [...modelKeys.all, 'histograms', name] as const,
  versions: (name: string) => [...modelKeys.all, 'versions', name] as const,
};
export const queueKeys = {
  now: () => ['queues', 'now'] as const,
  /** Samples folded from successive GET /queues answers while the screen is open. */
  history: () => ['queues', 'history'] as const,
};
export const workerKeys = { list: () => ['workers', 'list'] as const };
export const metricsKeys = { ticks: () => ['metrics', 'ticks'] as const };
export const eventKeys = { list: () => ['events', 'list'] as const };
export const auditKeys = { list: () => ['audit', 'list'] as const };
export const tokenKeys = { list: () => ['tokens', 'list'] as const };
export const settingsKeys = { all: () => ['settings'] as const };

/** The feed's topics (GET /api/v1/stream). */
export const topics = {
  models: 'models',
  residency: 'residency',
  queues: 'queues',
  events: 'events',
  metrics: 'metrics',
} as const;
