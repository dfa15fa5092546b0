/** Every control API path the console calls, in one place (the engine's routes under /api/v1). */
import type { ModelAction } from './types.js';

const base = '/api/v1';
const enc = encodeURIComponent;

export const routes = {
  setup: `${base}/setup`,
  session: `${base}/session`,
  workers: `${base}/workers`,
  models: `${base}/models`,
  model: (name: string) => `${base}/models/${enc(name)}`,
  modelAction: (name: string, action: ModelAction) => `${base}/models/${enc(name)}:${action}`,
  policy: (name: string) => `${base}/policies/${enc(name)}`,
  metrics: `${base}/metrics/series`,
  audit: `${base}/audit`,
  events: `${base}/events`,
  tokens: `${base}/tokens`,
  token: (id: string) => `${base}/tokens/${enc(id)}`,
  settings: `${base}/settings`,
  stream: `${base}/stream`,
} as const;
