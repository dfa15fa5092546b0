/** Every control API path the console calls (the engine's routes under /api/v1), in one place. */
const base = '/api/v1';
const enc = encodeURIComponent;

export const routes = {
  health: `${base}/health`,
  setup: `${base}/setup`,
  session: `${base}/session`,
  workers: `${base}/workers`,
  settings: `${base}/settings`,
  models: `${base}/models`,
  model: (name: string) => `${base}/models/${enc(name)}`,
  /** POST: load, unload, reload, drain, resume, pin (body {residency}), unpin. */
  modelAction: (name: string, action: string) => `${base}/models/${enc(name)}/${action}`,
  /** PATCH with the fields that change. */
  modelPolicy: (name: string) => `${base}/models/${enc(name)}/policy`,
  modelMetrics: (name: string) => `${base}/models/${enc(name)}/metrics?resolution=s`,
  modelIo: (name: string) => `${base}/models/${enc(name)}/io`,
  modelHistograms: (name: string) => `${base}/models/${enc(name)}/histograms`,
  modelVersions: (name: string) => `${base}/models/${enc(name)}/versions`,
  /** POST {version}: put a kept version back (audited). */
  modelRollback: (name: string) => `${base}/models/${enc(name)}/rollback`,
  /** POST: run the bundle's reference input through the engine (operator). */
  modelTry: (name: string) => `${base}/models/${enc(name)}/try`,
  queues: `${base}/queues`,
  /** Oldest first after `afterSeq`, at most 1000 a page. */
  events: (afterSeq = 0, model?: string) =>
    `${base}/events?limit=1000&afterSeq=${afterSeq}${model ? `&model=${enc(model)}` : ''}`,
  audit: `${base}/audit?limit=500`,
  uploads: `${base}/uploads`,
  upload: (id: string) => `${base}/uploads/${enc(id)}`,
  uploadComplete: (id: string) => `${base}/uploads/${enc(id)}/complete`,
  tokens: `${base}/tokens`,
  token: (id: string) => `${base}/tokens/${enc(id)}`,
  stream: `${base}/stream`,
} as const;
