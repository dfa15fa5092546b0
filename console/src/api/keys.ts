/**
 * Query keys, one factory per resource. REST queries and stream deltas write the same keys, so
 * there is one cache and no second store.
 */
export const sessionKeys = { me: () => ['session'] as const };

export const modelKeys = {
  all: ['models'] as const,
  list: () => [...modelKeys.all, 'list'] as const,
  detail: (name: string) => [...modelKeys.all, 'detail', name] as const,
};

export const workerKeys = {
  all: ['workers'] as const,
  list: () => [...workerKeys.all, 'list'] as const,
};

export const metricsKeys = { series: () => ['metrics', 'series'] as const };
export const auditKeys = { list: () => ['audit', 'list'] as const };
export const eventKeys = { list: () => ['events', 'list'] as const };
export const tokenKeys = { list: () => ['tokens', 'list'] as const };
export const settingsKeys = { all: () => ['settings'] as const };

/** Stream topics and the key each one feeds. */
export const topics = {
  models: 'models',
  workers: 'workers',
  metrics: 'metrics',
  audit: 'audit',
  events: 'events',
  model: (name: string) => `model:${name}`,
} as const;
