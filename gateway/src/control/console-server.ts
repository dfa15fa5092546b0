/**
 * The gateway's console port: the console and control API for the fleet. The placement routes
 * are the gateway's own (GET /api/v1/placements, GET /api/v1/placements/audit, POST
 * /api/v1/placements/{model}/{action}); every other path, WebSocket upgrades included (the live
 * feed), is passed through to the console port of the worker the request names (`?worker=NAME`,
 * or the x-hloserve-worker header for REST; console-target.ts), or of the first ready one by name
 * when it names none. So the console shows any worker's screens, and that worker checks the token.
 *
 * Auth: the caller's Authorization header is forwarded to the named (or default) worker's GET
 * /api/v1/session; its answer (who, which scope) decides, so tokens are minted, revoked and expire
 * in one place (under the supervisor the workers share one store). A
 * viewer may read placements, an operator may act on them. Each action is stored with its audit
 * entry in the gateway's PlacementState (placement-state.ts) before it is answered; a store that
 * fails puts the model's placement back and answers 500. An action may carry an Idempotency-Key:
 * a repeated key within 10 minutes replays the first answer.
 *
 * TLS: with a certificate the port serves HTTPS and the live feed over wss; the hop to the worker
 * stays plaintext (on loopback under the supervisor). The settings answer's `tls` object is
 * rewritten to describe this listener, the one the caller reached, not the worker's.
 */
import { STATUS_CODES, createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect } from 'node:net';
import { ServeError, toHttpStatus } from '@hloserve/common/errors';
import type { Gateway } from '../gateway.js';
import { consoleTarget, WORKER_HEADER } from './console-target.js';
import { applyPlacementAction, isPlacementAction } from './placement-actions.js';
import { placementView } from './placement-view.js';
import { secureOptions, tlsSettingsView, type GatewayTls } from '../tls.js';
import { listen } from '@hloserve/common/listen';

type Scope = 'viewer' | 'operator' | 'admin';
const SCOPES: readonly Scope[] = ['viewer', 'operator', 'admin'];

interface Principal {
  readonly actor: string;
  readonly name: string;
  readonly scope: Scope;
}

export interface GatewayConsoleHandle {
  readonly server: Server;
  readonly port: number;
  close(): Promise<void>;
}

const MAX_BODY = 64 * 1024;
const REPLAY_MS = 10 * 60_000;

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

function sendError(res: ServerResponse, err: unknown): void {
  const { status, body } = toHttpStatus(err);
  sendJson(res, status, body);
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
      if (n > MAX_BODY) {
        reject(new ServeError('HLO_ERR_INVALID_ARGUMENT', `request body larger than ${MAX_BODY} bytes`));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8').trim();
      if (text === '') return resolve({});
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(new ServeError('HLO_ERR_INVALID_ARGUMENT', 'request body is not JSON'));
      }
    });
    req.on('error', reject);
  });
}

export async function startGatewayConsole(
  gw: Gateway,
  host: string,
  port: number,
  log: (msg: string, fields: Record<string, unknown>) => void,
  tls: GatewayTls | null = null,
): Promise<GatewayConsoleHandle> {
  const replays = new Map<string, { at: number; status: number; body: unknown }>();

  /** Asks the named (or default) worker who the caller is; throws its refusal as the gateway's. */
  const principal = async (req: IncomingMessage, needed: Scope): Promise<Principal> => {
    const w = consoleTarget(gw, req.url ?? '/', req.headers[WORKER_HEADER]).worker;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (req.headers.authorization) headers.authorization = req.headers.authorization;
    let r: Response;
    try {
      r = await fetch(`http://${w.address.console}/api/v1/session`, { headers, signal: AbortSignal.timeout(5000) });
    } catch (err) {
      // As a passed-through request to that worker answers (pass, below): the worker is out of reach.
      const why = (err as Error & { cause?: Error }).cause?.message ?? (err as Error).message;
      throw new ServeError('HLO_ERR_SHUTTING_DOWN', `console worker '${w.name}' did not answer: ${why}`, {
        cause: err,
      });
    }
    if (r.status === 401) throw new ServeError('HLO_ERR_UNAUTHENTICATED', 'a valid token is required');
    if (!r.ok) throw new ServeError('HLO_ERR_PERMISSION_DENIED', `the token was refused (HTTP ${r.status})`);
    const p = ((await r.json()) as { data: Principal }).data;
    if (SCOPES.indexOf(p.scope) < SCOPES.indexOf(needed))
      throw new ServeError('HLO_ERR_PERMISSION_DENIED', `this needs the ${needed} scope; the token has ${p.scope}`);
    return p;
  };

  const own = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean> => {
    if (path === '/api/v1/placements' || path === '/api/v1/placements/audit') {
      if (req.method !== 'GET') throw new ServeError('HLO_ERR_UNSUPPORTED', `${req.method} ${path} is not a route`);
      await principal(req, 'viewer');
      if (path.endsWith('/audit')) sendJson(res, 200, { data: await gw.state.listAudit(500) });
      else sendJson(res, 200, { data: await placementView(gw), seq: gw.placement.repacks });
      return true;
    }
    const m = /^\/api\/v1\/placements\/([^/]+)\/([^/]+)$/.exec(path);
    if (!m) return false;
    if (req.method !== 'POST') throw new ServeError('HLO_ERR_UNSUPPORTED', `${req.method} ${path} is not a route`);
    const who = await principal(req, 'operator');
    const model = decodePathPart(m[1]!);
    const action = m[2]!;
    if (!isPlacementAction(action)) throw new ServeError('HLO_ERR_NOT_FOUND', `no placement action '${action}'`);
    const key = req.headers['idempotency-key'];
    const now = Date.now();
    for (const [k, v] of replays) if (now - v.at > REPLAY_MS) replays.delete(k);
    const replayKey = typeof key === 'string' ? `${who.actor}\n${key}` : null;
    const seen = replayKey ? replays.get(replayKey) : undefined;
    if (seen) {
      sendJson(res, seen.status, seen.body);
      return true;
    }
    const body = actionBody(await readJson(req));
    const prior = gw.placement.operatorState(model);
    const change = await applyPlacementAction(gw, model, { action, ...body });
    let entry;
    try {
      entry = await gw.state.save(gw.placement.operatorState(model), {
        actor: who.actor,
        actorName: who.name,
        action: `placement.${action}`,
        target: model,
        before: change.before,
        after: change.after,
      });
    } catch (err) {
      // Unstored, the change would vanish at the next restart: undo it so memory and store agree.
      gw.placement.restore([prior], [...gw.fleet.workers.keys()]);
      await gw.placementTick(true);
      throw new ServeError(
        'HLO_ERR_INTERNAL',
        `the placement change could not be stored, so it was undone: ${(err as Error).message}`,
        { cause: err },
      );
    }
    log('audit', { ...entry });
    const answer = {
      data: { change, audit: entry.seq, placement: await placementView(gw) },
      seq: gw.placement.repacks,
    };
    if (replayKey) replays.set(replayKey, { at: now, status: 200, body: answer });
    sendJson(res, 200, answer);
    return true;
  };

  /**
   * Everything else goes to the worker the request names, as it came (Host included: its Origin
   * check sees the browser's), less the `worker` parameter. Its answers, refusals included, come
   * back as they are.
   */
  const pass = (req: IncomingMessage, res: ServerResponse): void => {
    const { worker: w, url } = consoleTarget(gw, req.url ?? '/', req.headers[WORKER_HEADER]);
    const [h, p] = splitHostPort(w.address.console!);
    const settings = url.split('?')[0] === '/api/v1/settings';
    const out = request({ host: h, port: p, method: req.method, path: url, headers: req.headers }, (wr) => {
      if (settings && (wr.statusCode ?? 0) < 300) return answerSettings(wr, res);
      res.writeHead(wr.statusCode ?? 502, wr.headers);
      wr.pipe(res);
    });
    out.on('error', (err) => {
      if (!res.headersSent) sendError(res, new ServeError('HLO_ERR_SHUTTING_DOWN', `console worker: ${err.message}`));
      else res.destroy();
    });
    res.once('close', () => !res.writableFinished && out.destroy());
    req.pipe(out);
  };

  /** The worker's settings with `tls` describing the gateway's listener. */
  const answerSettings = (wr: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    wr.on('data', (c: Buffer) => chunks.push(c));
    wr.on('end', () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: Record<string, unknown> };
        body.data.tls = tlsSettingsView(tls);
        sendJson(res, wr.statusCode ?? 200, body);
      } catch (err) {
        sendError(res, new ServeError('HLO_ERR_INTERNAL', `console worker's settings: ${(err as Error).message}`));
      }
    });
    wr.on('error', () => res.destroy());
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0]!;
    own(req, res, path).then(
      (handled) => {
        if (handled) return;
        try {
          pass(req, res);
        } catch (err) {
          // Unread, the body would hold the connection: drain it while the error goes back.
          req.resume();
          sendError(res, err);
        }
      },
      (err: unknown) => sendError(res, err),
    );
  };
  const server: Server = tls === null ? createServer(onRequest) : createHttpsServer(secureOptions(tls), onRequest);
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
    let target;
    try {
      // The console's feed names its worker in the query: a browser WebSocket cannot set headers.
      target = consoleTarget(gw, req.url ?? '/', req.headers[WORKER_HEADER]);
    } catch (err) {
      const { status, body } = toHttpStatus(err);
      const text = JSON.stringify(body);
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/json; charset=utf-8\r\n` +
          `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
      );
      return;
    }
    const [h, p] = splitHostPort(target.worker.address.console!);
    const up = connect(p, h, () => {
      const lines = [`${req.method} ${target.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      up.write(lines.join('\r\n') + '\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    up.on('error', () => socket.destroy());
    socket.on('error', () => up.destroy());
    socket.on('close', () => up.destroy());
    up.on('close', () => socket.destroy());
  });
  const bound = await listen(server, host, port);
  return {
    server,
    port: bound,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** A percent-encoded path segment; malformed encoding is the caller's error, not a crash. */
function decodePathPart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ServeError(
      'HLO_ERR_INVALID_ARGUMENT',
      `the model name in the path is not valid percent-encoding: '${part}'`,
    );
  }
}

/** An action's body: absent, or a JSON object whose only fields are the strings `from` and `to`. */
function actionBody(body: unknown): { from?: string; to?: string } {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new ServeError(
      'HLO_ERR_INVALID_ARGUMENT',
      'the request body must be a JSON object, e.g. {"from":"w0","to":"w1"}',
    );
  const out: { from?: string; to?: string } = {};
  for (const [k, v] of Object.entries(body)) {
    if (k !== 'from' && k !== 'to')
      throw new ServeError(
        'HLO_ERR_INVALID_ARGUMENT',
        `unknown field '${k}' in the request body (only "from" and "to")`,
      );
    if (typeof v !== 'string' || v === '')
      throw new ServeError('HLO_ERR_INVALID_ARGUMENT', `"${k}" must be a worker name (a non-empty string)`);
    out[k] = v;
  }
  return out;
}

function splitHostPort(addr: string): [string, number] {
  const i = addr.lastIndexOf(':');
  return [addr.slice(0, i).replace(/^\[|\]$/g, ''), Number(addr.slice(i + 1))];
}
