/**
 * JSON schemas of every control API route: Fastify validates requests and serializes responses
 * with them, and the OpenAPI document (/api/v1/openapi.json) is generated from them. The console
 * reads its types from here. Field names are camelCase.
 */

export const str = { type: 'string' } as const;
export const int = { type: 'integer' } as const;
export const num = { type: 'number' } as const;
export const bool = { type: 'boolean' } as const;
export const nullable = <T extends object>(s: T) => ({ anyOf: [s, { type: 'null' }] }) as const;
export const obj = <P extends Record<string, object>>(
  properties: P,
  required: (keyof P & string)[] = Object.keys(properties),
) => ({ type: 'object', properties, required, additionalProperties: false }) as const;

export const errorBody = obj({ error: str, code: str });
export const residency = { type: 'string', enum: ['unpinned', 'system', 'device'] } as const;
export const scope = { type: 'string', enum: ['viewer', 'operator', 'admin'] } as const;
export const discipline = { type: 'string', enum: ['fair', 'fifo', 'edf'] } as const;

/** Error answers every authenticated route can give. */
export const errorResponses = {
  400: errorBody,
  401: errorBody,
  403: errorBody,
  404: errorBody,
  409: errorBody,
  500: errorBody,
  501: errorBody,
  503: errorBody,
} as const;

export const deviceMemory = obj({
  ordinal: int,
  platform: str,
  totalBytes: nullable(num),
  budgetBytes: nullable(num),
  residentBytes: num,
  pinnedBytes: num,
  arenaBytes: nullable(num),
  freeBytes: nullable(num),
});

export const worker = obj({
  name: str,
  version: str,
  platform: str,
  modelControlMode: str,
  discipline,
  ready: bool,
  inflight: int,
  devices: { type: 'array', items: deviceMemory },
});

export const policy = obj({
  residency,
  weight: num,
  maxBatchSize: nullable(int),
  maxQueueDelayUs: nullable(int),
});

export const model = obj({
  name: str,
  version: str,
  state: { type: 'string', enum: ['UNKNOWN', 'READY', 'UNAVAILABLE', 'LOADING', 'UNLOADING'] },
  reason: str,
  batchSizes: { type: 'array', items: int },
  residency: nullable(
    obj({
      floor: residency,
      weightBytes: num,
      deviceResident: bool,
      hostResident: bool,
      loading: bool,
      leases: int,
      loads: int,
      evictions: int,
      lastUsedAt: nullable(int),
    }),
  ),
  policy: nullable(policy),
  queue: nullable(obj({ depth: int, rows: int, inflight: int, oldestWaitMs: int, deadlineMisses: int })),
  drain: nullable(obj({ since: int, pending: int, idle: bool })),
  stats: nullable(
    obj({
      requestsServed: int,
      rowsServed: int,
      paddedRows: int,
      dispatchCount: int,
      failedDispatches: int,
      computeSecondsTotal: num,
      queueWaitSecondsTotal: num,
      costSeconds: { type: 'object', additionalProperties: num },
    }),
  ),
});

export const modelParams = obj({ name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$', maxLength: 200 } });

export const policyPatch = {
  type: 'object',
  properties: {
    residency,
    weight: { type: 'number', exclusiveMinimum: 0, maximum: 1e6 },
    maxBatchSize: nullable({ type: 'integer', minimum: 1 }),
    maxQueueDelayUs: nullable({ type: 'integer', minimum: 0, maximum: 60_000_000 }),
  },
  additionalProperties: false,
  minProperties: 1,
} as const;

export const pinBody = obj({ residency: { type: 'string', enum: ['system', 'device'] } });

export const auditRecord = obj({
  seq: int,
  at: int,
  actor: str,
  action: str,
  target: str,
  before: {},
  after: {},
  result: str,
  requestId: str,
  idempotencyKey: nullable(str),
});

export const eventRecord = obj({
  seq: int,
  at: int,
  kind: str,
  model: nullable(str),
  data: { type: 'object', additionalProperties: true },
});

export const token = obj({
  id: str,
  name: str,
  scope,
  createdAt: int,
  createdBy: str,
  expiresAt: nullable(int),
  revokedAt: nullable(int),
  lastUsedAt: nullable(int),
});

export const tokenCreate = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    scope,
    /** Lifetime in seconds; absent: never expires. */
    ttlSeconds: { type: 'integer', minimum: 1, maximum: 10 * 366 * 86400 },
  },
  required: ['name', 'scope'],
  additionalProperties: false,
} as const;

export const settingsView = obj({
  discipline,
  modelControlMode: str,
  stateStore: { type: 'string', enum: ['sqlite', 'postgres'] },
  tls: obj({
    enabled: bool,
    certFile: nullable(str),
    subject: nullable(str),
    validTo: nullable(str),
    clientCertificates: bool,
  }),
  feed: obj({ metricsIntervalMs: int, heartbeatMs: int }),
  /** The device's budget for evictable weights (null: unlimited). */
  weightBudgetBytes: nullable(num),
});

/** The state store's health, on GET /settings only (a PATCH's audit record stays free of timings). */
export const storeHealth = obj({
  dialect: { type: 'string', enum: ['sqlite', 'postgres'] },
  location: str,
  reachable: bool,
  latencyMs: nullable(num),
  migrations: nullable(obj({ applied: int, known: int, latest: nullable(str) })),
  error: nullable(str),
});

export const settingsWithStore = {
  ...settingsView,
  properties: { ...settingsView.properties, store: storeHealth },
  required: [...settingsView.required, 'store'],
} as const;

export const settingsPatch = {
  type: 'object',
  properties: { discipline, weightBudgetBytes: { type: 'integer', minimum: 0 } },
  additionalProperties: false,
  minProperties: 1,
} as const;

export const metricSample = obj({
  at: int,
  requestsPerSecond: num,
  p50Ms: nullable(num),
  p99Ms: nullable(num),
  queueDepth: int,
  residentBytes: num,
  loads: int,
  evictions: int,
});

/** `{data, seq}`: seq is the live feed's position for that resource, to resume the stream from. */
export const envelope = <T extends object>(data: T) => obj({ data, seq: int });
export const dataOnly = <T extends object>(data: T) => obj({ data });
export const listOf = <T extends object>(item: T) => ({ type: 'array', items: item }) as const;
