/**
 * A stand-in for the control API, installed with page.route / page.routeWebSocket. It exists for
 * scale and fault injection only (2,000 models, a dropped feed, a viewer token against a full
 * model set, deterministic screenshots); the real-engine specs talk to the real engine.
 * Shapes follow engine/src/control/api/schemas.ts.
 */
import type { Page, WebSocketRoute } from '@playwright/test';

export const TOKENS = {
  admin: 'admin-token-0123456789',
  operator: 'operator-token-0123456789',
  viewer: 'viewer-token-0123456789',
} as const;
export const SETUP_TOKEN = 'setup-token-abcdef';
const MiB = 2 ** 20;
/** The stand-in's clock: every time it reports is before this instant. */
export const T0 = Date.UTC(2026, 10, 23, 20, 0, 0);

/** A small deterministic generator, so screenshots are the same on every run. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const families = ['resnet', 'mlp', 'fno', 'unet', 'vit', 'bert', 'yolo', 'efficientnet', 'mobilenet', 'deeponet'];

export function makeModels(n: number) {
  const r = rng(7);
  return Array.from({ length: n }, (_, i) => {
    const name = n <= families.length ? families[i]! : `${families[i % families.length]}-${String(i).padStart(4, '0')}`;
    const x = r();
    const state = x < 0.82 ? 'READY' : x < 0.9 ? 'UNAVAILABLE' : x < 0.95 ? 'LOADING' : 'UNKNOWN';
    const device = state === 'READY' && r() < 0.45;
    const floor = i % 17 === 3 ? 'device' : i % 5 === 0 ? 'unpinned' : 'system';
    const weightBytes = Math.round((4 + r() * 180) * MiB);
    const served = Math.round(r() * 50_000);
    const calls = Math.max(1, Math.round(served / (1 + r() * 6)));
    return {
      name,
      version: String(1 + (i % 3)),
      state,
      reason: state === 'UNAVAILABLE' ? 'unloaded by request' : '',
      batchSizes: i % 2 ? [1, 8, 32] : [1, 4],
      residency:
        state === 'UNKNOWN'
          ? null
          : {
              floor,
              weightBytes,
              deviceResident: device || floor === 'device',
              hostResident: floor !== 'unpinned' || device,
              loading: state === 'LOADING',
              leases: device ? Math.round(r() * 3) : 0,
              loads: 1 + Math.round(r() * 20),
              evictions: Math.round(r() * 15),
              lastUsedAt: device ? T0 - Math.round(r() * 600_000) : null,
            },
      policy: { residency: floor, weight: 1 + (i % 4), maxBatchSize: null, maxQueueDelayUs: i % 3 ? null : 2000 },
      queue:
        state === 'READY'
          ? { depth: Math.round(r() * 6), rows: Math.round(r() * 12), inflight: Math.round(r() * 2) }
          : null,
      stats:
        state === 'READY'
          ? {
              requestsServed: served,
              rowsServed: served * 2,
              paddedRows: Math.round(served * 0.1),
              dispatchCount: calls,
              failedDispatches: i % 23 === 0 ? 2 : 0,
              computeSecondsTotal: calls * 0.004,
              queueWaitSecondsTotal: served * 0.0015,
              costSeconds: i % 2 ? { '1': 0.0011, '8': 0.0042, '32': 0.013 } : { '1': 0.0009, '4': 0.0021 },
            }
          : null,
    };
  });
}

type Model = ReturnType<typeof makeModels>[number];

export interface FakeOptions {
  readonly models?: number;
  readonly setupDone?: boolean;
  /** Hold every model list answer this long (a slow engine). */
  readonly delayMs?: number;
}

export class FakeControlApi {
  readonly models: Model[];
  setupDone: boolean;
  readonly audit: object[] = [];
  readonly sockets = new Set<WebSocketRoute>();
  /** Topics the console holds on the feed now (subscribed and not since unsubscribed). */
  readonly subscribed = new Set<string>();
  private seq = { models: 1, residency: 1, queues: 1, events: 1, metrics: 1 };

  constructor(private readonly opts: FakeOptions = {}) {
    this.models = makeModels(opts.models ?? families.length);
    this.setupDone = opts.setupDone ?? true;
    for (let i = 0; i < 12; i++)
      this.audit.push({
        seq: 12 - i,
        at: T0 - i * 240_000,
        actor: i % 3 ? 'token:3f2a9c1d0e4b' : 'setup',
        action: ['model.pin', 'model.unload', 'model.policy', 'token.create'][i % 4],
        target: i % 4 === 3 ? 'token:ci-viewer' : `model:${this.models[i % this.models.length]!.name}`,
        before: { residency: 'system' },
        after: { residency: i % 2 ? 'device' : 'unpinned' },
        result: i === 5 ? 'refused' : 'ok',
        requestId: `req-${1000 + i}`,
        idempotencyKey: null,
      });
  }

  private device() {
    const onDevice = this.models.filter((m) => m.residency?.deviceResident);
    const pinned = onDevice
      .filter((m) => m.residency!.floor === 'device')
      .reduce((s, m) => s + m.residency!.weightBytes, 0);
    const resident = onDevice.reduce((s, m) => s + m.residency!.weightBytes, 0) - pinned;
    const budget = Math.max(512 * MiB, Math.round((resident * 1.2) / MiB) * MiB);
    return {
      ordinal: 0,
      platform: 'cpu',
      totalBytes: null,
      budgetBytes: budget,
      residentBytes: resident,
      pinnedBytes: pinned,
      arenaBytes: Math.round(budget * 1.05),
      freeBytes: Math.max(0, budget - resident),
    };
  }

  worker() {
    return {
      name: 'worker0',
      version: '0.1.0',
      platform: 'cpu',
      modelControlMode: 'explicit',
      discipline: 'fair',
      ready: true,
      inflight: 3,
      devices: [this.device()],
    };
  }

  events() {
    return this.models.slice(0, 8).flatMap((m, i) => [
      {
        seq: 2 * i + 1,
        at: T0 - (16 - 2 * i) * 60_000,
        kind: 'model.loaded',
        model: m.name,
        data: { ms: 120 + i * 7, bytes: m.residency?.weightBytes ?? 0 },
      },
      {
        seq: 2 * i + 2,
        at: T0 - (15 - 2 * i) * 60_000,
        kind: 'weights.evicted',
        model: m.name,
        data: { reason: 'lru', freedBytes: m.residency?.weightBytes ?? 0 },
      },
    ]);
  }

  ticks(count: number) {
    const r = rng(11);
    const names = this.models.slice(0, 20).map((m) => m.name);
    return Array.from({ length: count }, (_, k) => ({
      at: T0 - (count - k) * 1000,
      models: Object.fromEntries(
        names.map((n, j) => [
          n,
          {
            at: T0 - (count - k) * 1000,
            requestsPerSecond: 20 + 15 * Math.sin((k + j * 9) / 12) + r() * 5,
            // A second with requests has percentiles, as the engine reports them; p99 above p50.
            p50Ms: 1.2 + j * 0.15 + 0.4 * Math.sin(k / 9) + r() * 0.3,
            p99Ms: 4 + j * 0.4 + 1.5 * Math.sin(k / 7) + r() * 1.5,
            queueDepth: Math.round(r() * 3),
            residentBytes: 0,
            loads: Math.floor((k + j) / 40),
            evictions: Math.floor((k + j * 3) / 55),
          },
        ]),
      ),
    }));
  }

  /** GET /models/:name/io: an image model's tensors (named axes, batch last in the manifest). */
  io(m: Model) {
    const side = 32 << m.batchSizes.length;
    const tensor = (name: string, letters: string, dims: Record<string, number>, wireShape: number[]) => ({
      name,
      datatype: 'FP32',
      letters,
      wireLetters: [...letters].reverse().join(''),
      dims,
      wireShape,
      wireBatchAxis: 0,
    });
    const input = tensor('image', 'cwhn', { c: 3, w: side, h: side, n: -1 }, [-1, side, side, 3]);
    const output = tensor('logits', 'kn', { k: 1000, n: -1 }, [-1, 1000]);
    return {
      name: m.name,
      kind: 'model' as const,
      description: `${m.name} version ${m.version}, exported from JAX`,
      inputs: [input],
      outputs: [output],
      executableInputs: [
        tensor('params', 'p', { p: Math.round((m.residency?.weightBytes ?? 4 * MiB) / 4) }, []),
        input,
      ],
      executableOutputs: [output],
      hooks: false,
      metaCalls: [],
      compiledBatchSizes: m.batchSizes,
      reference: 'client-reference.json' as const,
      provenance: { exporter: 'jax 0.10.2', exportedAt: new Date(T0 - 7 * 86_400_000).toISOString() },
      warnings: [],
    };
  }

  /** GET /models/:name/histograms: latency buckets and executions per compiled size, from the model's stats. */
  histograms(m: Model) {
    const served = m.stats?.requestsServed ?? 0;
    const bounds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
    const shape = [0.02, 0.18, 0.34, 0.22, 0.12, 0.07, 0.03, 0.015, 0.004, 0.001, 0, 0];
    const counts = shape.map((f) => Math.round(served * f));
    const count = counts.reduce((a, b) => a + b, 0);
    const dispatches = m.stats?.dispatchCount ?? 0;
    const per = m.batchSizes.map((_, i) => Math.round(dispatches / 2 ** (i + 1)));
    per[0]! += dispatches - per.reduce((a, b) => a + b, 0);
    return {
      latencySeconds: m.stats ? { bounds, counts, sum: count * 0.0032, count } : null,
      batchSizes: Object.fromEntries(m.batchSizes.map((b, i) => [String(b), per[i]!])),
      rowsServed: m.stats?.rowsServed ?? 0,
      paddedRows: m.stats?.paddedRows ?? 0,
    };
  }

  /** GET /models/:name/versions: the serving folder and two kept ones, newest first. */
  versions(m: Model) {
    const bytes = m.residency?.weightBytes ?? 4 * MiB;
    const n = Number(m.version) + 2;
    return Array.from({ length: 3 }, (_, i) => {
      // A kept version is named by the time it was installed; 'current' is the serving folder.
      const at = T0 - i * 86_400_000 - 3_600_000;
      return {
        id: i === 0 ? 'current' : String(at),
        current: i === 0,
        at,
        files: 4 - (i % 2),
        bytes: bytes + i * 4096,
        manifestSha256: ((m.name.length * 2654435761 + i * 40503) >>> 0).toString(16).padStart(8, '0') + 'a3f9',
        description: `${m.name} version ${n - i}`,
        compiledBatchSizes: i === 2 ? [1] : m.batchSizes,
      };
    });
  }

  /** GET /queues: the ready models' queues and their share of device time against their weight. */
  queues() {
    const ready = this.models.filter((m) => m.queue && m.stats);
    const weightSum = ready.reduce((s, m) => s + m.policy.weight, 0) || 1;
    const recent = ready.map((m, i) => 0.05 + ((i * 37) % 11) * 0.02);
    const recentSum = recent.reduce((a, b) => a + b, 0) || 1;
    return {
      at: T0,
      discipline: 'fair' as const,
      executing: 1,
      models: ready.map((m, i) => ({
        name: m.name,
        weight: m.policy.weight,
        depth: m.queue!.depth,
        rows: m.queue!.rows,
        inflight: m.queue!.inflight,
        oldestWaitMs: m.queue!.depth ? 2 + ((i * 13) % 40) : 0,
        deadlineMisses: i % 7 === 2 ? 3 : 0,
        requestsServed: m.stats!.requestsServed,
        computeSecondsTotal: m.stats!.computeSecondsTotal,
        recentComputeSeconds: recent[i]!,
        contendedShare: recent[i]! / recentSum,
        weightShare: m.policy.weight / weightSum,
      })),
    };
  }

  scopeOf(auth: string | undefined): 'admin' | 'operator' | 'viewer' | null {
    const t = auth?.replace(/^Bearer /, '');
    if (t === TOKENS.admin) return 'admin';
    if (t === TOKENS.operator) return 'operator';
    if (t === TOKENS.viewer) return 'viewer';
    return null;
  }

  async install(page: Page): Promise<void> {
    await page.route('**/api/v1/**', async (route) => {
      const req = route.request();
      const url = new URL(req.url());
      const path = url.pathname.replace(/^\/api\/v1/, '');
      const json = (status: number, body: unknown) =>
        route.fulfill({ status, contentType: 'application/json', body: JSON.stringify(body) });
      if (path === '/setup' && req.method() === 'POST') {
        const body = req.postDataJSON() as { setupToken?: string };
        if (this.setupDone || body.setupToken !== SETUP_TOKEN)
          return json(401, { error: 'setup token not valid', code: 'HLO_ERR_UNAUTHENTICATED' });
        this.setupDone = true;
        return json(201, { data: { token: TOKENS.admin, tokenInfo: this.token('admin', 'admin') } });
      }
      const scope = this.scopeOf(req.headers()['authorization']);
      if (!scope) return json(401, { error: 'a bearer token is required', code: 'HLO_ERR_UNAUTHENTICATED' });
      const need =
        req.method() === 'GET'
          ? path.startsWith('/audit')
            ? 'operator'
            : path.startsWith('/tokens')
              ? 'admin'
              : 'viewer'
          : path.startsWith('/tokens')
            ? 'admin'
            : 'operator';
      const rank = { viewer: 0, operator: 1, admin: 2 };
      if (rank[scope] < rank[need])
        return json(403, { error: `needs a ${need} token`, code: 'HLO_ERR_PERMISSION_DENIED' });
      if (this.opts.delayMs) await new Promise((r) => setTimeout(r, this.opts.delayMs));
      if (path === '/session')
        return json(200, { data: { actor: `token:${scope}`, tokenId: scope, name: `${scope}-console`, scope } });
      if (path === '/workers') return json(200, { data: [this.worker()], seq: this.seq.residency });
      if (path === '/settings')
        return json(200, {
          data: {
            discipline: 'fair',
            modelControlMode: 'explicit',
            stateStore: 'sqlite',
            store: {
              dialect: 'sqlite',
              location: '/var/cache/hloserve/state/hloserve.sqlite',
              reachable: true,
              latencyMs: 0.05,
              migrations: { applied: 1, known: 1, latest: '0000_init' },
              error: null,
            },
            tls: { enabled: false, certFile: null, subject: null, validTo: null, clientCertificates: false },
            feed: { metricsIntervalMs: 1000, heartbeatMs: 15000 },
          },
        });
      if (path === '/models') return json(200, { data: this.models, seq: this.seq.models });
      const metrics = /^\/models\/([^/]+)\/metrics$/.exec(path);
      if (metrics)
        return json(200, {
          data: this.ticks(300).map(
            (t) =>
              t.models[decodeURIComponent(metrics[1]!)] ?? { ...Object.values(t.models)[0]!, requestsPerSecond: 0 },
          ),
        });
      if (path === '/queues') return json(200, { data: this.queues() });
      const inspect = /^\/models\/([^/]+)\/(io|histograms|versions)$/.exec(path);
      if (inspect && req.method() === 'GET') {
        const m = this.models.find((x) => x.name === decodeURIComponent(inspect[1]!));
        if (!m) return json(404, { error: 'unknown model', code: 'HLO_ERR_MODEL_NOT_FOUND' });
        const kind = inspect[2];
        return json(200, {
          data: kind === 'io' ? this.io(m) : kind === 'histograms' ? this.histograms(m) : this.versions(m),
        });
      }
      const action = /^\/models\/([^/]+)\/(load|unload|reload|drain|pin|unpin)$/.exec(path);
      if (action) {
        const m = this.models.find((x) => x.name === decodeURIComponent(action[1]!));
        if (!m) return json(404, { error: 'unknown model', code: 'HLO_ERR_MODEL_NOT_FOUND' });
        return json(200, { data: m });
      }
      if (path === '/events') return json(200, { data: this.events(), seq: this.seq.events });
      if (path === '/audit') return json(200, { data: this.audit });
      if (path === '/tokens' && req.method() === 'GET')
        return json(200, {
          data: [this.token('admin', 'admin'), this.token('ci-viewer', 'viewer'), this.token('ops', 'operator')],
        });
      if (path === '/tokens' && req.method() === 'POST') {
        const b = req.postDataJSON() as { name: string; scope: 'viewer' };
        return json(201, { data: { token: 'new-token-xyz', tokenInfo: this.token(b.name, b.scope) } });
      }
      return json(404, { error: `no route ${path}`, code: 'HLO_ERR_MODEL_NOT_FOUND' });
    });
    await page.routeWebSocket('**/api/v1/stream', (ws) => this.serveFeed(ws));
  }

  private token(name: string, scope: string) {
    return {
      id: `${name.padEnd(12, '0').slice(0, 12)}`,
      name,
      scope,
      createdAt: T0 - 86_400_000,
      createdBy: 'setup',
      expiresAt: null,
      revokedAt: null,
      lastUsedAt: T0 - 60_000,
    };
  }

  private snapshot(topic: Exclude<keyof FakeControlApi['seq'], 'metrics'>): object {
    const items =
      topic === 'models'
        ? Object.fromEntries(
            this.models.map((m) => [
              m.name,
              {
                name: m.name,
                version: m.version,
                state: m.state,
                reason: m.reason,
                batchSizes: m.batchSizes,
                policy: m.policy,
              },
            ]),
          )
        : topic === 'residency'
          ? { ...Object.fromEntries(this.models.map((m) => [m.name, m.residency])), 'device:0': this.device() }
          : topic === 'queues'
            ? Object.fromEntries(this.models.map((m) => [m.name, m.queue]))
            : this.events();
    return { topic, seq: this.seq[topic], kind: 'snapshot', data: { items } };
  }

  /**
   * The metrics topic's snapshot as the engine sends it: every model's latest sample, and two
   * minutes of ticks' totals (rates and counters summed, the slowest model's percentiles).
   */
  private metricsSnapshot(): object {
    const ticks = this.ticks(120);
    const recent = ticks.map((t) => {
      const s = Object.values(t.models);
      const max = (xs: number[]) => (xs.length === 0 ? null : Math.max(...xs));
      return {
        at: t.at,
        totals: {
          requestsPerSecond: s.reduce((a, x) => a + x.requestsPerSecond, 0),
          p50Ms: max(s.map((x) => x.p50Ms)),
          p99Ms: max(s.map((x) => x.p99Ms)),
          loads: s.reduce((a, x) => a + x.loads, 0),
          evictions: s.reduce((a, x) => a + x.evictions, 0),
        },
      };
    });
    const last = ticks[ticks.length - 1]!;
    const items = Object.fromEntries(Object.entries(last.models).map(([n, { at: _at, ...values }]) => [n, values]));
    return { topic: 'metrics', seq: this.seq.metrics, kind: 'snapshot', data: { at: last.at, items, recent } };
  }

  private serveFeed(ws: WebSocketRoute): void {
    this.sockets.add(ws);
    let authed = false;
    ws.onMessage((raw) => {
      const msg = JSON.parse(String(raw)) as { type: string; token?: string; topics?: (keyof FakeControlApi['seq'])[] };
      if (!authed) {
        if (msg.type !== 'auth' || !this.scopeOf(msg.token)) {
          ws.send(JSON.stringify({ type: 'error', code: 'HLO_ERR_UNAUTHENTICATED', error: 'token not valid' }));
          return void ws.close({ code: 4401, reason: 'HLO_ERR_UNAUTHENTICATED' });
        }
        authed = true;
        return void ws.send(JSON.stringify({ type: 'ready', actor: 'token:x', scope: this.scopeOf(msg.token) }));
      }
      if (msg.type === 'subscribe')
        for (const t of msg.topics ?? []) {
          this.subscribed.add(t);
          ws.send(JSON.stringify(t === 'metrics' ? this.metricsSnapshot() : this.snapshot(t)));
        }
      if (msg.type === 'unsubscribe') for (const t of msg.topics ?? []) this.subscribed.delete(t);
    });
    ws.onClose(() => {
      this.sockets.delete(ws);
      this.subscribed.clear();
    });
  }

  /** Drops every feed connection, as an engine restart would. */
  dropFeeds(): void {
    for (const ws of this.sockets) void ws.close({ code: 1012, reason: 'restart' });
  }
}
