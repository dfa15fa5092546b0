/**
 * WebSocket /api/v1/stream: the live feed. Authentication: the subprotocol list
 * `hloserve.v1, bearer.<token>` (browsers cannot set headers on a WebSocket), or a first message
 * `{type:'auth', token}` within 5 s. The Origin, when a browser sends one, must be the console's
 * own or a configured one. Protocol: docs/control-api.md.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { quote, ServeError, toServeError } from '@hloserve/common/errors';
import type { ControlContext } from '../api/context.js';
import type { Principal } from '../auth/scopes.js';
import type { FeedClient } from '../feed/feed-client.js';

export const FEED_SUBPROTOCOL = 'hloserve.v1';
const AUTH_TIMEOUT_MS = 5000;

type ClientMessage =
  | { type: 'auth'; token: string }
  | { type: 'subscribe'; topics: string[]; since?: Record<string, number> }
  | { type: 'unsubscribe'; topics: string[] }
  | { type: 'ping' };

export function originAllowed(req: FastifyRequest, allowed: readonly string[]): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true; // not a browser
  if (allowed.includes(origin)) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

export const streamRoute =
  (ctx: ControlContext): FastifyPluginAsync =>
  async (app) => {
    app.get(
      '/stream',
      {
        websocket: true,
        config: { scope: 'viewer', selfAuth: true },
        schema: { summary: 'Live feed (WebSocket): topics models, residency, queues, events, metrics', hide: false },
        preValidation: async (req) => {
          if (!originAllowed(req, ctx.options.allowedOrigins))
            throw new ServeError(
              'HLO_ERR_PERMISSION_DENIED',
              `origin '${req.headers.origin}' may not open the live feed`,
            );
        },
      },
      (socket, req) => serveFeed(ctx, socket, req),
    );
  };

function serveFeed(ctx: ControlContext, socket: WebSocket, req: FastifyRequest): void {
  let principal: Principal | null = null;
  let client: FeedClient | null = null;
  let alive = true;
  const fail = (err: unknown): void => {
    const e = toServeError(err);
    if (socket.readyState === socket.OPEN)
      socket.send(JSON.stringify({ type: 'error', code: e.code, error: e.message }));
    socket.close(
      e.code === 'HLO_ERR_UNAUTHENTICATED' ? 4401 : e.code === 'HLO_ERR_PERMISSION_DENIED' ? 4403 : 4400,
      e.code,
    );
  };
  const authenticated = (p: Principal): void => {
    principal = p;
    clearTimeout(authTimer);
    client = ctx.hub.attach(socket);
    socket.send(
      JSON.stringify({
        type: 'ready',
        actor: p.actor,
        scope: p.scope,
        topics: ['models', 'residency', 'queues', 'events', 'metrics'],
      }),
    );
  };
  const authTimer = setTimeout(
    () => principal === null && fail(new ServeError('HLO_ERR_UNAUTHENTICATED', 'no token within 5 s')),
    AUTH_TIMEOUT_MS,
  );
  authTimer.unref();

  // Messages are handled one after another (authentication is async).
  let chain: Promise<void> = Promise.resolve();
  const bearer = String(req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .find((s) => s.startsWith('bearer.'));
  if (bearer !== undefined) chain = ctx.tokens.verify(bearer.slice('bearer.'.length)).then(authenticated, fail);

  socket.on('message', (raw, isBinary) => {
    chain = chain.then(async () => {
      if (socket.readyState !== socket.OPEN) return;
      try {
        if (isBinary) throw new ServeError('HLO_ERR_INVALID_ARGUMENT', 'feed messages are JSON text');
        let parsed: unknown;
        try {
          parsed = JSON.parse(String(raw));
        } catch {
          throw new ServeError('HLO_ERR_INVALID_ARGUMENT', 'a feed message must be JSON');
        }
        // JSON that is not an object (null, a number, an array) has no type to read.
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
          throw new ServeError('HLO_ERR_INVALID_ARGUMENT', 'a feed message must be a JSON object');
        const msg = parsed as ClientMessage;
        if (principal === null) {
          if (msg.type !== 'auth' || typeof msg.token !== 'string')
            throw new ServeError('HLO_ERR_UNAUTHENTICATED', "the first message must be {type:'auth', token}");
          authenticated(await ctx.tokens.verify(msg.token));
          return;
        }
        handle(ctx, client!, msg);
      } catch (err) {
        fail(err);
      }
    });
  });

  socket.on('pong', () => (alive = true));
  const heartbeat = setInterval(() => {
    if (!alive) return void socket.terminate();
    alive = false;
    socket.ping();
    if (client !== null && !client.markedForResync)
      client.deliver(JSON.stringify({ type: 'heartbeat', at: Date.now() }));
  }, ctx.options.feed.heartbeatMs);
  heartbeat.unref();
  socket.on('close', () => {
    clearInterval(heartbeat);
    clearTimeout(authTimer);
    if (client) ctx.hub.detach(client);
  });
}

function handle(ctx: ControlContext, client: FeedClient, msg: ClientMessage): void {
  switch (msg.type) {
    case 'subscribe':
    case 'unsubscribe': {
      if (!Array.isArray(msg.topics)) throw new ServeError('HLO_ERR_INVALID_ARGUMENT', 'topics must be an array');
      for (const name of msg.topics) {
        if (typeof name !== 'string' || !ctx.hub.isTopic(name))
          throw new ServeError('HLO_ERR_INVALID_ARGUMENT', `unknown topic ${quote(name)}`);
        const topic = ctx.hub.topic(name);
        if (msg.type === 'unsubscribe') client.topics.delete(topic);
        else {
          const since = msg.since?.[name];
          client.subscribe(topic, typeof since === 'number' ? since : undefined);
        }
      }
      return;
    }
    case 'ping':
      return void client.socket.send(JSON.stringify({ type: 'pong', at: Date.now() }));
    default:
      // quote(): the type is the client's JSON, an object whose toString is not a function included.
      throw new ServeError(
        'HLO_ERR_INVALID_ARGUMENT',
        `unknown message type ${quote((msg as { type?: unknown }).type)}`,
      );
  }
}
