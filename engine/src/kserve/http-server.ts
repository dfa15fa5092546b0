import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Cancellation } from '@hloserve/common/cancellation';
import { invalidArgument, ServeError, toHttpStatus } from '@hloserve/common/errors';
import { requestDeadline } from './deadline.js';
import { systemClock } from '../scheduler/clock.js';
import { encodeHttpInfer, parseHttpInfer } from './http-infer-body.js';
import type { InferenceService } from './service.js';

interface ModelParams {
  model: string;
  version?: string;
}

function sendError(reply: FastifyReply, err: unknown): FastifyReply {
  const { status, body } = toHttpStatus(err);
  return reply.code(status).type('application/json').send(body);
}

/**
 * KServe V2 over HTTP/REST, with Triton's extensions (binary tensors, repository, shared memory,
 * statistics, config). Bodies are taken as raw bytes: JSON and the binary extension share one
 * parser, and the size limit answers 413 before anything is parsed.
 */
export function buildHttpServer(service: InferenceService, options: { logger?: boolean } = {}): FastifyInstance {
  const limit = service.limits.maxRecvBytes;
  // The limit is enforced here rather than by Fastify's bodyLimit: an oversized body is read to
  // its end and discarded before the 413 goes out, so the client reads our answer instead of a
  // connection reset in the middle of its upload.
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: Number.MAX_SAFE_INTEGER,
    return503OnClosing: true,
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, done) => {
    const chunks: Buffer[] = [];
    let size = 0;
    payload.on('data', (c: Buffer) => {
      size += c.byteLength;
      if (size <= limit) chunks.push(c);
      else chunks.length = 0;
    });
    payload.on('error', (err: Error) => done(err, undefined));
    payload.on('end', () => {
      if (size > limit) {
        done(
          new ServeError('HLO_ERR_MESSAGE_TOO_LARGE', `request body of ${size} bytes exceeds the ${limit}-byte limit`),
          undefined,
        );
      } else {
        done(null, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
      }
    });
  });
  app.setErrorHandler((err: { statusCode?: number; message: string }, _req, reply) => {
    if (err instanceof ServeError) return sendError(reply, err);
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)
      return sendError(reply, invalidArgument(err.message));
    return sendError(reply, err);
  });
  app.setNotFoundHandler((req, reply) => reply.code(404).send({ error: `no route for ${req.method} ${req.url}` }));

  const jsonBody = (req: FastifyRequest): Record<string, unknown> => {
    const b = req.body as Buffer | undefined;
    if (!b || b.byteLength === 0) return {};
    try {
      const v: unknown = JSON.parse(b.toString('utf8'));
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
      return v as Record<string, unknown>;
    } catch (err) {
      throw invalidArgument(`request body is not a JSON object: ${(err as Error).message}`);
    }
  };
  const wrap =
    <P>(fn: (req: FastifyRequest<{ Params: P }>, reply: FastifyReply) => unknown) =>
    async (req: FastifyRequest<{ Params: P }>, reply: FastifyReply) => {
      try {
        const out = await fn(req, reply);
        if (out !== reply) return reply.send(out ?? {});
        return reply;
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
        const body = (req.body as Buffer | undefined) ?? Buffer.alloc(0);
        const header = req.headers['inference-header-content-length'];
        const wire = parseHttpInfer(
          req.params.model,
          req.params.version ?? '',
          body,
          Array.isArray(header) ? header[0] : header,
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
          return reply.send(out.body);
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
