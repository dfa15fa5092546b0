/**
 * The gateway's KServe HTTP/REST endpoint, on node:http: per-model paths go to a worker holding
 * the model (the body as it came; the worker's answer streamed back with its status), the
 * repository index is merged over all workers, shared-memory registration fans out. The request
 * body is held (not parsed) so a request that could not run on one worker can go to the next.
 */
import { Agent, createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { status as Status } from '@grpc/grpc-js';
import type { Gateway } from './gateway.js';
import type { RawAnswer, WorkerClient } from './worker-client.js';
import { secureOptions, type GatewayTls } from './tls.js';
import { ERROR_CATALOGUE, type ErrorCode, ServeError, toHttpStatus, toServeError } from '@hloserve/common/errors';
import { answerClientError } from '@hloserve/common/http-client-error';
import { closeServer } from '@hloserve/common/idle-connections';
import { listen } from '@hloserve/common/listen';

interface HttpAnswer extends RawAnswer {
  /** The worker's response, to stream to the client (an answer the gateway does not retry). */
  readonly response?: IncomingMessage;
  /** A worker answer read in full because it might have been retried elsewhere. */
  readonly buffered?: { status: number; headers: IncomingMessage['headers']; body: Buffer };
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'upgrade',
  'host',
  'content-length',
  'x-timeout-ms',
]);

/**
 * A failure the gateway answers itself on HTTP (no worker's answer to pass on: no holder, every
 * holder out of reach, the deadline past at the gateway) as the catalogue's code for its status.
 */
const GRPC_TO_CODE: Record<number, ErrorCode> = {
  [Status.NOT_FOUND]: 'HLO_ERR_MODEL_NOT_FOUND',
  [Status.UNAVAILABLE]: 'HLO_ERR_SHUTTING_DOWN',
  [Status.DEADLINE_EXCEEDED]: 'HLO_ERR_DEADLINE_EXCEEDED',
  [Status.RESOURCE_EXHAUSTED]: 'HLO_ERR_OVERLOADED',
  [Status.INVALID_ARGUMENT]: 'HLO_ERR_INVALID_ARGUMENT',
  [Status.FAILED_PRECONDITION]: 'HLO_ERR_FAILED_PRECONDITION',
  [Status.UNIMPLEMENTED]: 'HLO_ERR_UNSUPPORTED',
  [Status.CANCELLED]: 'HLO_ERR_CANCELLED',
};
const gatewayError = (a: RawAnswer): ServeError =>
  new ServeError(GRPC_TO_CODE[a.code!] ?? 'HLO_ERR_INTERNAL', a.details ?? 'error');

/**
 * The request's body, or MESSAGE_TOO_LARGE once past `limit`: the rest is read and dropped so that
 * the client reads the answer instead of a reset (the server's request timeout bounds a client that
 * never stops), as the worker's HTTP port does.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
      if (n <= limit) chunks.push(c);
      else chunks.length = 0;
    });
    req.on('end', () => {
      if (n > limit) reject(new ServeError('HLO_ERR_MESSAGE_TOO_LARGE', `request body larger than ${limit} bytes`));
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    req.on('error', reject);
  });
}

export interface GatewayHttpHandle {
  readonly server: Server;
  readonly port: number;
  close(): Promise<void>;
}

export async function startGatewayHttp(
  gw: Gateway,
  host: string,
  port: number,
  tls: GatewayTls | null = null,
): Promise<GatewayHttpHandle> {
  const agents = new Map<string, Agent>();
  const agentFor = (w: WorkerClient) => {
    let a = agents.get(w.name);
    if (!a) agents.set(w.name, (a = new Agent({ keepAlive: true, maxSockets: gw.opts.workerMaxInFlight })));
    return a;
  };

  /** One HTTP exchange with a worker, classified like a gRPC answer for failover. */
  const send = (
    w: WorkerClient,
    req: IncomingMessage,
    body: Buffer,
    deadlineMs: number | null,
    onClose: (f: () => void) => void,
  ): Promise<HttpAnswer> =>
    new Promise((resolve) => {
      const [h, p] = splitHostPort(w.address.http);
      const headers: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v;
      headers['content-length'] = String(body.length);
      if (deadlineMs !== null) headers['x-timeout-ms'] = String(Math.max(1, Math.floor(deadlineMs - Date.now())));
      const out = request(
        { host: h, port: p, method: req.method, path: req.url, headers, agent: agentFor(w) },
        (res) => {
          const code = res.statusCode ?? 502;
          if (code === 404 || code === 503) {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const b = Buffer.concat(chunks);
              const text = b.toString('utf8');
              resolve({
                ok: false,
                code: code === 404 ? Status.NOT_FOUND : Status.UNAVAILABLE,
                details: code === 404 ? text : /not ready|shutting down/i.test(text) ? text : 'worker answered 503',
                buffered: { status: code, headers: res.headers, body: b },
              });
            });
            res.on('error', () => resolve({ ok: false, code: Status.UNAVAILABLE, details: 'Connection dropped' }));
            return;
          }
          resolve({ ok: true, response: res });
        },
      );
      // Set when the client went away and the call to the worker was ended for that reason: the
      // error that follows is the client's cancellation, not the worker's connection breaking
      // (which marks the worker down, and with it every model it holds, until discovery).
      let clientGone = false;
      out.on('error', (err: NodeJS.ErrnoException) =>
        resolve(
          clientGone
            ? { ok: false, code: Status.CANCELLED, details: 'the client closed the request' }
            : {
                ok: false,
                code: Status.UNAVAILABLE,
                details:
                  err.code === 'ECONNREFUSED'
                    ? `connect ECONNREFUSED ${w.address.http}`
                    : `Connection dropped: ${err.message}`,
              },
        ),
      );
      onClose(() => {
        clientGone = true;
        out.destroy();
      });
      out.end(body);
    });

  const json = (res: ServerResponse, status: number, v: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(v));
  };
  /** The gateway's own refusals: the catalogue's `{error, code}` and status, as a worker answers. */
  const fail = (res: ServerResponse, err: unknown) => {
    const { status, body } = toHttpStatus(toServeError(err));
    json(res, status, body);
  };
  const noneReady = () => new ServeError('HLO_ERR_SHUTTING_DOWN', 'no worker behind the gateway is ready');

  const reply = (res: ServerResponse, a: HttpAnswer | RawAnswer) => {
    const ha = a as HttpAnswer;
    if (ha.response) {
      const headers: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(ha.response.headers))
        if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v;
      res.writeHead(ha.response.statusCode ?? 502, headers);
      ha.response.pipe(res);
      return;
    }
    if (ha.buffered) {
      res.writeHead(ha.buffered.status, { 'content-type': ha.buffered.headers['content-type'] ?? 'application/json' });
      res.end(ha.buffered.body);
      return;
    }
    if (!a.ok) return fail(res, gatewayError(a));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(a.body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = req.url ?? '/';
    const pathOnly = url.split('?')[0]!;
    const arrival = Date.now();
    const t = req.headers['x-timeout-ms'];
    let deadlineMs: number | null = null;
    if (typeof t === 'string') {
      const ms = Number(t);
      if (!(ms > 0))
        return fail(res, new ServeError('HLO_ERR_INVALID_ARGUMENT', 'x-timeout-ms must be a positive number'));
      deadlineMs = arrival + ms;
    }
    if (pathOnly === '/v2/health/live') return void res.writeHead(200).end();
    if (pathOnly === '/v2/health/ready') return void res.writeHead(gw.fleet.anyReady() ? 200 : 400).end();
    let body: Buffer;
    try {
      body = await readBody(req, gw.opts.maxMessageBytes);
    } catch (err) {
      return fail(res, err);
    }
    const onClose = (f: () => void) => res.once('close', () => !res.writableFinished && f());
    const ready = gw.fleet.readyWorkers();

    if (pathOnly === '/v2/repository/index' && req.method === 'POST') {
      const as = await Promise.all(ready.map((w) => send(w, req, body, deadlineMs, onClose)));
      const byName = new Map<string, { name: string; state?: string }>();
      for (const a of as) {
        if (!a.ok || !a.response) continue;
        const chunks: Buffer[] = [];
        for await (const c of a.response) chunks.push(c as Buffer);
        if (a.response.statusCode !== 200) continue;
        for (const m of JSON.parse(Buffer.concat(chunks).toString('utf8')) as { name: string; state?: string }[]) {
          const seen = byName.get(m.name);
          if (!seen || (seen.state !== 'READY' && m.state === 'READY')) byName.set(m.name, m);
        }
      }
      return json(
        res,
        200,
        [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1)),
      );
    }
    const shm = /^\/v2\/systemsharedmemory\/(?:region\/[^/]+\/)?(register|unregister)$/.exec(pathOnly);
    const repo = /^\/v2\/repository\/models\/[^/]+\/(load|unload)$/.exec(pathOnly);
    if ((shm || repo) && req.method === 'POST') {
      // Every worker must see the same registrations and models; an all-or-nothing register.
      const as = await Promise.all(ready.map((w) => send(w, req, body, deadlineMs, onClose)));
      const results = await Promise.all(
        as.map(async (a) => {
          if (!a.ok || !a.response) return a;
          const chunks: Buffer[] = [];
          for await (const c of a.response) chunks.push(c as Buffer);
          return {
            ...a,
            response: undefined,
            buffered: {
              status: a.response.statusCode ?? 502,
              headers: a.response.headers,
              body: Buffer.concat(chunks),
            },
          };
        }),
      );
      const failed = results.find((r) => !r.ok || (r.buffered && r.buffered.status >= 300));
      if (shm?.[1] === 'register' && failed) {
        const region = /region\/([^/]+)\//.exec(pathOnly)?.[1];
        await Promise.all(
          ready.map((w, i) =>
            results[i]!.ok && results[i]!.buffered!.status < 300
              ? fetch(`http://${w.address.http}/v2/systemsharedmemory/region/${region}/unregister`, {
                  method: 'POST',
                }).catch(() => null)
              : null,
          ),
        );
      }
      if (ready.length === 0) return fail(res, noneReady());
      const chosen =
        shm?.[1] === 'unregister'
          ? (results.find((r) => r.ok && r.buffered!.status < 300) ?? failed)
          : (failed ?? results[0]);
      return reply(res, chosen!);
    }
    const perModel = /^\/v2\/models\/([^/]+)(?:\/|$)/.exec(pathOnly);
    if (perModel && perModel[1] !== 'stats') {
      let model: string;
      try {
        model = decodeURIComponent(perModel[1]!);
      } catch {
        return fail(
          res,
          new ServeError('HLO_ERR_INVALID_ARGUMENT', 'the model name in the path is not valid percent-encoding'),
        );
      }
      const isInfer = pathOnly.endsWith('/infer');
      if (pathOnly.endsWith('/ready') && gw.fleet.holders(model).length === 0) {
        await gw.fleet.refresh();
        // Not held anywhere: not ready, as a worker answers for a model it does not know.
        if (gw.fleet.holders(model).length === 0) return void res.writeHead(400).end();
      }
      if (isInfer && gw.metrics.inFlight >= gw.opts.maxInFlight) {
        gw.metrics.shed++;
        return fail(
          res,
          new ServeError('HLO_ERR_OVERLOADED', `the gateway has ${gw.opts.maxInFlight} requests in flight`),
        );
      }
      gw.metrics.inFlight++;
      const started = performance.now();
      try {
        const a = await gw.forward(model, 1, (w, dl) => send(w, req, body, dl, onClose), deadlineMs);
        if (isInfer) {
          const code =
            (a as HttpAnswer).response?.statusCode ?? (a.ok ? 200 : ERROR_CATALOGUE[gatewayError(a).code].http);
          gw.metrics.count('http', model, String(code), (performance.now() - started) / 1000);
        }
        return reply(res, a);
      } finally {
        gw.metrics.inFlight--;
      }
    }
    const w = ready[0];
    if (!w) return fail(res, noneReady());
    return reply(res, await send(w, req, body, deadlineMs, onClose));
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((err: Error) => {
      if (!res.headersSent) fail(res, err);
      else res.destroy();
    });
  };
  const server: Server = tls === null ? createServer(onRequest) : createHttpsServer(secureOptions(tls), onRequest);
  // A request Node's parser refused (unframed bytes after a GET, a bad request line, headers past
  // the limit) gets the catalogue's answer, as on a worker's port, instead of Node's bare 400.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) =>
    answerClientError(err, socket, server.requestTimeout),
  );
  server.keepAliveTimeout = 65_000;
  const bound = await listen(server, host, port);
  return {
    server,
    port: bound,
    // The upstream agents go once every answer has: destroyed sooner, they would cut the
    // requests still in flight to the workers (a 503 for a call the stop should finish).
    close: () =>
      closeServer(server).then(() => {
        for (const a of agents.values()) a.destroy();
      }),
  };
}

function splitHostPort(addr: string): [string, number] {
  const i = addr.lastIndexOf(':');
  return [addr.slice(0, i).replace(/^\[|\]$/g, ''), Number(addr.slice(i + 1))];
}
