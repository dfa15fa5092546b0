/**
 * The control API: a Fastify app of encapsulated plugins under /api/v1, with its OpenAPI
 * document at /api/v1/openapi.json and the console's files at /. Routes: docs/control-api.md.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import websocket from '@fastify/websocket';
import { consoleFiles } from './console-files.js';
import type { Logger } from '../../log.js';
import type { Store } from '../../state/store.js';
import { AuditedMutations } from '../audit/audited-mutation.js';
import { TokenService } from '../auth/token-service.js';
import { EventLog } from '../events/event-log.js';
import { MetricHistory } from '../events/metric-history.js';
import { FeedHub } from '../feed/feed-hub.js';
import { DesiredState } from '../reconcile/desired-state.js';
import { inspectRoutes } from '../routes/inspect-routes.js';
import { modelRoutes } from '../routes/model-routes.js';
import { recordRoutes } from '../routes/record-routes.js';
import { FEED_SUBPROTOCOL, streamRoute } from '../routes/stream-route.js';
import { systemRoutes } from '../routes/system-routes.js';
import { uploadRoutes } from '../routes/upload-routes.js';
import { UploadService } from '../uploads/upload-service.js';
import { installAuth } from './auth-hook.js';
import type { ControlContext, ControlOptions } from './context.js';
import { installErrorHandler, sendControlError } from './error-handler.js';
import { lazySchemaCompilers } from '../../lazy-schema-compilers.js';
import type { ModelPort } from './model-port.js';
import { httpsOptions } from '../../tls/tls-material.js';
import { HTTP_LIMIT_DEFAULTS } from '../../transports/http-limits.js';
import { closeIdleWhenClosing } from '../../transports/close-idle.js';

export interface ControlAppOptions {
  readonly port: ModelPort;
  readonly store: Store;
  readonly log: Logger;
  readonly options: ControlOptions;
  readonly now?: () => number;
  /** 0 turns the 1 Hz metric sampler off (tests drive it by hand). */
  readonly metricIntervalMs?: number;
}

export interface ControlApp {
  readonly app: FastifyInstance;
  readonly context: ControlContext;
  readonly history: MetricHistory;
  /** The setup token printed at first start (null once an admin token exists). */
  readonly setupToken: string | null;
  close(): Promise<void>;
}

export async function buildControlApp(o: ControlAppOptions): Promise<ControlApp> {
  const now = o.now ?? Date.now;
  const tokens = new TokenService(o.store, now);
  const mutations = new AuditedMutations(o.store, now);
  // 0 turns the metric ticks off; the feed's load turn still comes once a second.
  const metricIntervalMs = o.metricIntervalMs ?? 1000;
  const loadMs = metricIntervalMs > 0 ? metricIntervalMs : 1000;
  const hub = new FeedHub({
    port: o.port,
    sampleMs: o.options.feed.sampleMs,
    loadMs,
    limits: { highWaterBytes: o.options.feed.highWaterBytes, lowWaterBytes: o.options.feed.highWaterBytes / 4 },
  });
  const events = new EventLog(o.store, o.port, hub.topic('events'), o.log);
  const history = new MetricHistory(
    o.store,
    o.port,
    hub.topic('metrics'),
    o.log,
    loadMs,
    metricIntervalMs > 0 ? (tick) => hub.onLoadTurn(tick) : null,
  );
  const desired = new DesiredState(o.store, o.port, now, o.log);
  const uploads = o.options.uploads ? new UploadService(o.store, o.options.uploads, now) : null;
  const context: ControlContext = {
    uploads,
    port: o.port,
    store: o.store,
    tokens,
    mutations,
    hub,
    events,
    history,
    desired,
    options: o.options,
    log: o.log,
  };

  const tls = o.options.tls ?? null;
  const app = Fastify({
    ...(tls ? { https: httpsOptions(tls) } : {}),
    logger: false,
    bodyLimit: 1 << 20,
    // Each route's schemas compile on its first request, not at start (lazy-schema-compilers.ts).
    schemaController: { compilersFactory: lazySchemaCompilers() as never },
    // The KServe port's limit: a model name that one port takes, the other takes too.
    routerOptions: { maxParamLength: HTTP_LIMIT_DEFAULTS.maxParamLength },
    // The router's own refusals (that limit, a bad percent-encoding) in the catalogue's form.
    frameworkErrors: sendControlError,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\x21-\x7e]{1,100}$/.test(given) ? given : randomUUID();
    },
  }) as unknown as FastifyInstance;
  closeIdleWhenClosing(app);
  installErrorHandler(app);
  installAuth(app, tokens);
  await app.register(swagger, {
    openapi: {
      info: { title: 'hloserve control API', version: '1' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });
  await app.register(websocket, {
    options: {
      maxPayload: 64 * 1024,
      handleProtocols: (protocols: Set<string>) => (protocols.has(FEED_SUBPROTOCOL) ? FEED_SUBPROTOCOL : false),
    },
  });
  await app.register(
    async (api) => {
      await api.register(systemRoutes(context));
      await api.register(modelRoutes(context));
      await api.register(inspectRoutes(context));
      await api.register(recordRoutes(context));
      await api.register(streamRoute(context));
      await api.register(uploadRoutes(context));
      api.get('/openapi.json', { config: { scope: 'public' }, schema: { hide: true } }, async () => app.swagger());
    },
    { prefix: '/api/v1' },
  );
  consoleFiles(app);
  await app.ready();

  const setupToken = await tokens.issueSetupToken(o.options.setupTokenFile);
  await desired.reconcile(mutations);

  return {
    app,
    context,
    history,
    setupToken,
    close: async () => {
      desired.close();
      hub.close();
      await app.close();
      await history.close();
      await events.close();
    },
  };
}
