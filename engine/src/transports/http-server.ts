import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Cancellation } from '@hloserve/common/cancellation';
import { invalidArgument, quote, ServeError, toHttpStatus } from '@hloserve/common/errors';
import { clampTimerMs } from '@hloserve/common/timers';
import { answerClientError } from '@hloserve/common/http-client-error';
import type { Duplex, Readable } from 'node:stream';
import type { WireInferRequest } from '@hloserve/common/wire';
import { requestDeadline } from './deadline.js';
import { HTTP_LIMIT_DEFAULTS } from './http-limits.js';
import { systemClock } from '../scheduler/clock.js';
import { encodeHttpInfer } from './http-infer-body.js';
import { type JsonUpload, OFF_THREAD_BYTES, openJsonUpload, parseHttpInferRequest } from './http-infer-parser.js';
import type { InferenceService } from './service.js';
import { httpsOptions, type TlsMaterial } from '../tls/tls-material.js';
import { lazySchemaCompilers } from '../lazy-schema-compilers.js';
import { closeIdleWhenClosing } from './close-idle.js';

interface ModelParams {
  model: string;
  version?: string;
}

function sendError(reply: FastifyReply, err: unknown): FastifyReply {
  const { status, body } = toHttpStatus(err);
  return reply.code(status).type('application/json').send(body);
}

export interface HttpServerOptions {
  readonly logger?: boolean;
  readonly maxJsonBytes?: number;
  readonly requestTimeoutMs?: number;
  readonly headersTimeoutMs?: number;
  /** TLS for the port; absent: plaintext. */
  readonly tls?: TlsMaterial | null;
}

/** A Fastify/Node error (414, 413, content-type, JSON) as a catalogue error. */
function fastifyError(err: { statusCode?: number; code?: string; message: string }): ServeError {
  if (err instanceof ServeError) return err;
  const status = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 414 : (err.statusCode ?? 500);
  const text = `${err.code ? `${err.code}: ` : ''}${err.message.slice(0, 200)}`;
  if (status === 413) return new ServeError('HLO_ERR_MESSAGE_TOO_LARGE', text);
  if (status === 408) return new ServeError('HLO_ERR_DEADLINE_EXCEEDED', text);
  if (status === 415) return new ServeError('HLO_ERR_UNSUPPORTED', text);
  if (status >= 400 && status < 500) return invalidArgument(text);
  return new ServeError('HLO_ERR_INTERNAL', text);
}

/** An infer body the parser thread parsed while it arrived; the route adds model and version. */
class ParsedInferBody {
  constructor(readonly request: WireInferRequest) {}
}

/**
 * A large all-JSON infer body of known length goes to the parser thread chunk by chunk as it
 * arrives (openJsonUpload), never whole on the event loop; the socket is paused while the thread
 * is behind. The route receives the parsed request.
 */
function streamJsonBody(
  payload: Readable,
  upload: JsonUpload,
  done: (err: Error | null, body?: ParsedInferBody) => void,
): void {
  let ended = false;
  upload.onDrain(() => payload.resume());
  payload.on('data', (c: Buffer) => {
    if (!upload.push(c)) payload.pause();
  });
  payload.on('error', (err: Error) => {
    upload.abort();
    done(err);
  });
  payload.on('close', () => {
    if (!ended) upload.abort();
  });
  payload.on('end', () => {
    ended = true;
    upload.end().then(
      (r) => done(null, new ParsedInferBody(r)),
      (err: Error) => done(err),
    );
  });
}

/**
 * KServe V2 over HTTP/REST, with Triton's extensions (binary tensors, repository, shared memory,
 * statistics, config). Bodies are taken as raw bytes: JSON and the binary extension share one
 * parser, and the size limits answer 413 before anything is parsed: the message limit for a body
 * with binary tensors, the smaller JSON limit for an all-JSON body.
 */
/**
 * What a handler returns when it sent the reply itself. Not the reply: a fastify reply is
 * thenable, so awaited it resolves to undefined once the response ends, and the reply was then
 * sent a second time, which fastify refuses with an error whose stack trace cost every request
 * 20 µs.
 */
const SENT: unique symbol = Symbol('sent');

export function buildHttpServer(service: InferenceService, options: HttpServerOptions = {}): FastifyInstance {
  const limit = service.limits.maxRecvBytes;
  const jsonLimit = Math.min(limit, options.maxJsonBytes ?? HTTP_LIMIT_DEFAULTS.maxJsonBytes);
  const requestTimeout = clampTimerMs(options.requestTimeoutMs ?? HTTP_LIMIT_DEFAULTS.requestTimeoutMs);
  const headersTimeout = clampTimerMs(options.headersTimeoutMs ?? HTTP_LIMIT_DEFAULTS.headersTimeoutMs);
  // The limit is enforced here rather than by Fastify's bodyLimit: an oversized body is read to
  // its end and discarded before the 413 goes out, so the client reads our answer instead of a
  // connection reset in the middle of its upload.
  const timeouts = {
    headersTimeout: Math.min(headersTimeout || requestTimeout, requestTimeout || headersTimeout),
    connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor((requestTimeout || 300_000) / 10))),
  };
  // node:https takes node:http's server options too, so TLS keeps the same timeouts.
  const serverOptions = options.tls ? { https: { ...httpsOptions(options.tls), ...timeouts } } : { http: timeouts };
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: Number.MAX_SAFE_INTEGER,
    return503OnClosing: true,
    // No route here has a schema: with these, Fastify never loads Ajv or fast-json-stringify.
    schemaController: { compilersFactory: lazySchemaCompilers() as never },
    routerOptions: { maxParamLength: HTTP_LIMIT_DEFAULTS.maxParamLength },
    requestTimeout,
    // Errors the router answers itself (a path segment past maxParamLength: 414, a bad URL
    // encoding): the catalogue's status and body.
    frameworkErrors: (err, _req, reply) => sendError(reply, fastifyError(err)),
    // Errors Node answers before Fastify sees the request (a header block past the limit, a
    // request that did not arrive in time, a malformed request line): the catalogue's status and
    // body, then the connection closes.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket: Duplex) => answerClientError(err, socket, requestTimeout),
    // Node checks the request and headers timeouts on this interval; a tenth keeps a stalled
    // request's overrun small.
    ...serverOptions,
  }) as unknown as FastifyInstance;
  closeIdleWhenClosing(app);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (req, payload, done) => {
    // Without Inference-Header-Content-Length the whole body is JSON.
    const allJson = req.headers['inference-header-content-length'] === undefined;
    const max = allJson ? jsonLimit : limit;
    const kind = allJson ? 'JSON body' : 'request body';
    const declared = Number(req.headers['content-length']);
    const known = Number.isSafeInteger(declared) && declared > 0 && declared <= max;
    if (known && allJson && declared >= OFF_THREAD_BYTES && req.routeOptions.url?.endsWith('/infer')) {
      streamJsonBody(payload, openJsonUpload(declared, jsonLimit), done);
      return;
    }
    // A large body goes into one buffer of its declared length, so no second copy of it blocks the
    // event loop at the end. The buffer is taken only once a quarter of the body has arrived: a
    // client that declares 256 MiB and sends nothing makes the server allocate nothing.
    let buf: Buffer | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    payload.on('data', (c: Buffer) => {
      const at = size;
      size += c.byteLength;
      if (size > max) {
        buf = null;
        chunks.length = 0;
      } else if (buf !== null) {
        if (size <= buf.byteLength) c.copy(buf, at);
        else {
          chunks.push(buf.subarray(0, at), c);
          buf = null;
        }
      } else {
        chunks.push(c);
        if (known && size >= declared / 4 && declared > 1 << 20 && chunks.length > 1 && size <= declared) {
          buf = Buffer.allocUnsafeSlow(declared);
          let o = 0;
          for (const x of chunks) o += x.copy(buf, o);
          chunks.length = 0;
        }
      }
    });
    payload.on('error', (err: Error) => done(err, undefined));
    payload.on('end', () => {
      if (size > max) {
        done(
          new ServeError('HLO_ERR_MESSAGE_TOO_LARGE', `${kind} of ${size} bytes exceeds the ${max}-byte limit`),
          undefined,
        );
      } else if (buf !== null) {
        const whole: Buffer = buf;
        done(null, size === whole.byteLength ? whole : whole.subarray(0, size));
      } else {
        done(null, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
      }
    });
  });
  app.setErrorHandler((err: { statusCode?: number; code?: string; message: string }, _req, reply) =>
    sendError(reply, fastifyError(err)),
  );
  app.setNotFoundHandler((req, reply) =>
    sendError(reply, invalidArgument(`no route for ${req.method} ${quote(req.url, 200)}`)),
  );
  const jsonBody = (req: FastifyRequest): Record<string, unknown> => {
    const b = req.body as Buffer | undefined;
    if (!b || b.byteLength === 0) return {};
    try {
      const v: unknown = JSON.parse(b.toString('utf8'));
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
      return v as Record<string, unknown>;
    } catch (err) {
      throw invalidArgument(`request body is not a JSON object: ${(err as Error).message.slice(0, 200)}`);
    }
  };
  const wrap =
    <P>(fn: (req: FastifyRequest<{ Params: P }>, reply: FastifyReply) => unknown) =>
    async (req: FastifyRequest<{ Params: P }>, reply: FastifyReply) => {
      try {
        const out = await fn(req, reply);
        // Returned here, the reply makes fastify wait for the response to finish, and nothing more.
        return out === SENT ? reply : reply.send(out ?? {});
      } catch (err) {
        return sendError(reply, err);
      }
    };

  app.get('/v2/health/live', (_req, reply) => reply.code(service.serverLive() ? 200 : 400).send());
  app.get('/v2/health/ready', (_req, reply) => reply.code(service.serverReady() ? 200 : 400).send());
  app.get(
    '/v2',
    wrap(() => service.serverMetadata()),
  );

  for (const prefix of ['/v2/models/:model', '/v2/models/:model/versions/:version']) {
    app.get(
      prefix,
      wrap<ModelParams>((req) => service.modelMetadata(req.params.model, req.params.version ?? '')),
    );
    app.get(`${prefix}/ready`, (req: FastifyRequest<{ Params: ModelParams }>, reply) =>
      reply.code(service.modelReady(req.params.model, req.params.version ?? '') ? 200 : 400).send(),
    );
    app.get(
      `${prefix}/config`,
      wrap<ModelParams>((req) => service.modelConfig(req.params.model, req.params.version ?? '')),
    );
    app.get(
      `${prefix}/stats`,
      wrap<ModelParams>((req) => ({
        model_stats: service.modelStatistics(req.params.model, req.params.version ?? ''),
      })),
    );
    app.post(
      `${prefix}/infer`,
      wrap<ModelParams>(async (req, reply) => {
        const header = req.headers['inference-header-content-length'];
        const wire =
          req.body instanceof ParsedInferBody
            ? { ...req.body.request, modelName: req.params.model, modelVersion: req.params.version ?? '' }
            : await parseHttpInferRequest(
                req.params.model,
                req.params.version ?? '',
                (req.body as Buffer | undefined) ?? Buffer.alloc(0),
                Array.isArray(header) ? header[0] : header,
                jsonLimit,
              );
        const t = req.headers['x-timeout-ms'];
        const headerMs = t === undefined ? null : Number(Array.isArray(t) ? t[0] : t);
        if (headerMs !== null && !(Number.isFinite(headerMs) && headerMs > 0))
          throw invalidArgument('x-timeout-ms must be a positive number');
        const cancellation = new Cancellation();
        const onClose = () => {
          if (!reply.sent) cancellation.cancel();
        };
        req.raw.socket.once('close', onClose);
        try {
          const deadline = requestDeadline(headerMs === null ? null : systemClock.now() + headerMs, wire.parameters);
          const res = await service.infer(wire, { deadline, signal: cancellation });
          const out = encodeHttpInfer(wire, res);
          if (out.body.byteLength > service.limits.maxSendBytes) {
            throw new ServeError(
              'HLO_ERR_MESSAGE_TOO_LARGE',
              `response of ${out.body.byteLength} bytes exceeds the send limit`,
            );
          }
          reply.type(out.contentType);
          if (out.headerLength !== null) reply.header('Inference-Header-Content-Length', String(out.headerLength));
          reply.send(out.body);
          return SENT;
        } finally {
          req.raw.socket.off('close', onClose);
        }
      }),
    );
  }
  app.get(
    '/v2/models/stats',
    wrap(() => ({ model_stats: service.modelStatistics('', '') })),
  );

  app.post(
    '/v2/repository/index',
    wrap((req) => service.repositoryIndex(jsonBody(req).ready === true)),
  );
  app.post(
    '/v2/repository/models/:model/load',
    wrap<ModelParams>(async (req) => {
      await service.loadModel(req.params.model);
      return {};
    }),
  );
  app.post(
    '/v2/repository/models/:model/unload',
    wrap<ModelParams>(async (req) => {
      await service.unloadModel(req.params.model);
      return {};
    }),
  );

  const shm = () => {
    if (!service.sharedMemory)
      throw new ServeError('HLO_ERR_UNSUPPORTED', 'system shared memory is disabled on this server');
    return service.sharedMemory;
  };
  const regionJson = (r: { name: string; key: string; offset: number; byteSize: number }) => ({
    name: r.name,
    key: r.key,
    offset: r.offset,
    byte_size: r.byteSize,
  });
  app.get(
    '/v2/systemsharedmemory/status',
    wrap(() => shm().status('').map(regionJson)),
  );
  app.get(
    '/v2/systemsharedmemory/region/:region/status',
    wrap<{ region: string }>((req) => shm().status(req.params.region).map(regionJson)),
  );
  app.post(
    '/v2/systemsharedmemory/region/:region/register',
    wrap<{ region: string }>((req) => {
      const b = jsonBody(req);
      const num = (k: string) => {
        const v = b[k] ?? 0;
        if (typeof v !== 'number') throw invalidArgument(`${k} must be a number`);
        return v;
      };
      if (typeof b.key !== 'string') throw invalidArgument('key must be a string');
      shm().register(req.params.region, b.key, num('offset'), num('byte_size'));
      return {};
    }),
  );
  app.post(
    '/v2/systemsharedmemory/unregister',
    wrap(() => (shm().unregister(''), {})),
  );
  app.post(
    '/v2/systemsharedmemory/region/:region/unregister',
    wrap<{ region: string }>((req) => (shm().unregister(req.params.region), {})),
  );
  // A CPU-only server has no CUDA regions; clients (perf_analyzer) still unregister them first.
  app.get(
    '/v2/cudasharedmemory/status',
    wrap(() => []),
  );
  app.post(
    '/v2/cudasharedmemory/unregister',
    wrap(() => ({})),
  );
  app.post(
    '/v2/cudasharedmemory/region/:region/unregister',
    wrap(() => ({})),
  );
  app.post(
    '/v2/cudasharedmemory/region/:region/register',
    wrap(() => {
      throw new ServeError('HLO_ERR_UNSUPPORTED', 'CUDA shared memory is not supported by this server');
    }),
  );
  return app;
}
