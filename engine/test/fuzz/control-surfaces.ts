import fc from 'fast-check';
import { WebSocket, type RawData } from 'ws';
import { ERROR_CATALOGUE } from '@hloserve/common/errors';
// Seeded: the shape of one request is drawn from it, so a finding replays.
import { random as prng } from '@hloserve/gateway/testing/fleet-sim';
import type { Harness } from '../control/harness.js';
import { withTimeout, type Target } from './surfaces.js';

/**
 * Property-based fuzzing of the control plane: every route of the REST API as its own OpenAPI
 * document lists it, and the live feed's WebSocket. Requests are shaped by the route's own schema
 * (its parameters, query and body, with values of the right type at and past their bounds, of the
 * wrong type, or random JSON) so that most get past validation into the handlers, which is where
 * an unchecked value would throw. The verdict: an answer in the catalogue (a 2xx, or an error
 * body `{error, code}` whose code is in the catalogue and whose status is not an internal error),
 * and the API still answering a valid request afterwards.
 */

const CODES = new Set<string>(Object.keys(ERROR_CATALOGUE));
/** Codes that say the server itself failed: no input may cause them. */
const SERVER_FAULTS = new Set(['HLO_ERR_INTERNAL']);
const HANG_MS = 15_000;

/** The subset of JSON Schema that the control API's schemas use. */
interface Schema {
  readonly type?: string | readonly string[];
  readonly properties?: Record<string, Schema>;
  readonly required?: readonly string[];
  readonly items?: Schema;
  readonly enum?: readonly unknown[];
  readonly anyOf?: readonly Schema[];
  readonly oneOf?: readonly Schema[];
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
}

interface Operation {
  readonly method: string;
  /** The OpenAPI path, e.g. /api/v1/models/{name}/pin. */
  readonly path: string;
  readonly params: readonly string[];
  readonly query: Record<string, Schema>;
  readonly body: Schema | null;
}

interface OpenApiDoc {
  readonly paths: Record<
    string,
    Record<
      string,
      {
        readonly parameters?: readonly { readonly name: string; readonly in: string; readonly schema?: Schema }[];
        readonly requestBody?: { readonly content?: Record<string, { readonly schema?: Schema }> };
      }
    >
  >;
}

/** The API's operations as its OpenAPI document lists them (the feed, a WebSocket, apart). */
export async function controlOperations(h: Harness): Promise<Operation[]> {
  const doc = (await h.control.app.inject({ url: '/api/v1/openapi.json' })).json() as OpenApiDoc;
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    if (path.endsWith('/stream')) continue;
    for (const [method, op] of Object.entries(methods)) {
      const params = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
      const query: Record<string, Schema> = {};
      for (const p of op.parameters ?? []) if (p.in === 'query') query[p.name] = p.schema ?? {};
      const body = op.requestBody?.content?.['application/json']?.schema ?? null;
      ops.push({ method: method.toUpperCase(), path, params, query, body });
    }
  }
  return ops.sort((a, b) => `${a.method} ${a.path}`.localeCompare(`${b.method} ${b.path}`));
}

const WEIRD_STRINGS = [
  '',
  ' ',
  'mlp',
  'MLP',
  'nope',
  '..',
  '../mlp',
  '%',
  '\u0000',
  '\ud800',
  '☃',
  '__proto__',
  'constructor',
  'a'.repeat(300),
  '{}',
  '1',
  '-1',
  'true',
  'null',
];
const WEIRD_NUMBERS = [0, -1, 1, 0.5, -0.5, 2 ** 31, 2 ** 32, 2 ** 53, -(2 ** 53), 1e308, -1e308, 1e-300];

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)]!;
}

function randomJson(r: () => number, depth = 0): unknown {
  const k = Math.floor(r() * (depth > 2 ? 5 : 7));
  switch (k) {
    case 0:
      return null;
    case 1:
      return r() < 0.5;
    case 2:
      return pick(r, WEIRD_NUMBERS);
    case 3:
      return pick(r, WEIRD_STRINGS);
    case 4:
      return Math.floor(r() * 100);
    case 5:
      return Array.from({ length: Math.floor(r() * 4) }, () => randomJson(r, depth + 1));
    default:
      // fromEntries: a key '__proto__' is an own property, as JSON.parse makes it, not a prototype.
      return Object.fromEntries(
        Array.from({ length: Math.floor(r() * 4) }, () => [pick(r, WEIRD_STRINGS), randomJson(r, depth + 1)]),
      );
  }
}

/** A value for `schema`: mostly of its type, at or past its bounds, sometimes anything at all. */
function valueFor(schema: Schema, r: () => number, depth = 0): unknown {
  if (r() < 0.15 || depth > 4) return randomJson(r, depth);
  const alt = schema.anyOf ?? schema.oneOf;
  if (alt !== undefined && alt.length > 0) return valueFor(pick(r, alt), r, depth + 1);
  if (schema.enum !== undefined && r() < 0.7) return pick(r, schema.enum);
  const type = Array.isArray(schema.type) ? pick(r, schema.type as string[]) : (schema.type as string | undefined);
  switch (type) {
    case 'object': {
      const o: [string, unknown][] = [];
      for (const [k, s] of Object.entries(schema.properties ?? {}))
        if ((schema.required ?? []).includes(k) ? r() < 0.9 : r() < 0.6) o.push([k, valueFor(s, r, depth + 1)]);
      if (r() < 0.1) o.push([pick(r, WEIRD_STRINGS), randomJson(r, depth + 1)]);
      return Object.fromEntries(o);
    }
    case 'array':
      return Array.from({ length: Math.floor(r() * 4) }, () => valueFor(schema.items ?? {}, r, depth + 1));
    case 'integer':
    case 'number': {
      const bounds = [schema.minimum, schema.maximum].filter((x): x is number => x !== undefined);
      const near = bounds.flatMap((b) => [b - 1, b, b + 1]);
      return pick(r, [...near, ...WEIRD_NUMBERS, Math.floor(r() * 1000)]);
    }
    case 'string': {
      const len = [schema.minLength, schema.maxLength].filter((x): x is number => x !== undefined);
      const edges = len.flatMap((n) => [Math.max(0, n - 1), n, n + 1]).map((n) => 'x'.repeat(n));
      return pick(r, [...edges, ...WEIRD_STRINGS]);
    }
    case 'boolean':
      return r() < 0.8 ? r() < 0.5 : pick(r, ['true', 1, 0, null]);
    case 'null':
      return null;
    default:
      return randomJson(r, depth);
  }
}

export interface ControlRequest {
  readonly op: number;
  readonly seed: number;
  /** Which credentials: the admin's, a viewer's, none, or a malformed bearer token. */
  readonly as: 'admin' | 'viewer' | 'none' | 'garbage';
  /** How the body is sent: per the schema as JSON, JSON of another shape, bytes, or mangled JSON text. */
  readonly body: 'schema' | 'json' | 'bytes' | 'mangled';
  readonly contentType: string | null;
  readonly segment: string;
  readonly bytes: Uint8Array;
}

export const controlRequest = (operations: number): fc.Arbitrary<ControlRequest> =>
  fc.record({
    op: fc.nat({ max: operations - 1 }),
    seed: fc.integer(),
    as: fc.constantFrom('admin', 'admin', 'admin', 'viewer', 'none', 'garbage'),
    body: fc.constantFrom('schema', 'schema', 'schema', 'json', 'bytes', 'mangled'),
    contentType: fc.constantFrom(
      'application/json',
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/octet-stream',
      'application/x-www-form-urlencoded',
      null,
    ),
    segment: fc.oneof(fc.constantFrom(...WEIRD_STRINGS), fc.string({ maxLength: 12 })),
    bytes: fc.uint8Array({ maxLength: 64 }),
  });

export interface ControlCredentials {
  readonly admin: string;
  readonly viewer: string;
}

function authHeader(as: ControlRequest['as'], c: ControlCredentials): Record<string, string> {
  if (as === 'none') return {};
  if (as === 'garbage') return { authorization: 'Bearer hlo_not_a_token' };
  return { authorization: `Bearer ${as === 'admin' ? c.admin : c.viewer}` };
}

/** A path segment for `text`; a lone surrogate (which no URL can carry) as U+FFFD. */
function pathSegment(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return encodeURIComponent(text.replace(/[\ud800-\udfff]/g, '\ufffd'));
  }
}

/** The request a generated input stands for (exported so a finding can be replayed by hand). */
export function buildControlRequest(
  ops: readonly Operation[],
  x: ControlRequest,
): { method: string; url: string; payload?: string | Buffer; contentType: string | null } {
  const op = ops[x.op % ops.length]!;
  const r = prng(x.seed);
  let url = op.path;
  for (const p of op.params) {
    const text = r() < 0.5 ? 'mlp' : x.segment;
    // Now and then as it is (a lone '%' is a bad percent-encoding for the router to refuse).
    const raw = r() < 0.1 && /^[\x21-\x7e]*$/.test(text) && !/[/?#]/.test(text);
    url = url.replace(`{${p}}`, raw ? text : pathSegment(text));
  }
  const q = new URLSearchParams();
  for (const [k, s] of Object.entries(op.query))
    if (r() < 0.5) {
      const v = valueFor(s, r);
      q.set(k, typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));
    }
  if (r() < 0.1) q.set(pick(r, WEIRD_STRINGS), pick(r, WEIRD_STRINGS));
  if ([...q.keys()].length > 0) url += `?${q.toString()}`;
  if (op.method === 'GET' || op.method === 'DELETE' || op.method === 'HEAD')
    return { method: op.method, url, contentType: null };
  let payload: string | Buffer;
  if (x.body === 'bytes') payload = Buffer.from(x.bytes);
  else {
    const text = JSON.stringify(x.body === 'schema' && op.body !== null ? valueFor(op.body, r) : randomJson(r)) ?? '';
    if (x.body === 'mangled' && text.length > 0) {
      const at = Math.floor(r() * text.length);
      payload = text.slice(0, at) + pick(r, ['{', '"', '\\', ']', '\u0000', '']) + text.slice(at + 1);
    } else payload = text;
  }
  return { method: op.method, url, payload, contentType: x.contentType };
}

/** The verdict on one answer of the REST API. */
export function judgeControlAnswer(status: number, body: string): string | null {
  if (status < 400) return status >= 200 ? null : `HTTP ${status}: ${body.slice(0, 200)}`;
  let parsed: { error?: unknown; code?: unknown };
  try {
    parsed = JSON.parse(body) as { error?: unknown; code?: unknown };
  } catch {
    return `HTTP ${status} without a JSON error body: ${body.slice(0, 200)}`;
  }
  const code = parsed.code;
  if (typeof code !== 'string' || !CODES.has(code)) return `HTTP ${status} with code ${String(code)}`;
  if (typeof parsed.error !== 'string') return `HTTP ${status} (${code}) without an error message`;
  if (SERVER_FAULTS.has(code) || status === 500) return `HTTP ${status} ${code}: ${parsed.error.slice(0, 200)}`;
  if (ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE].http !== status)
    return `HTTP ${status} with code ${code}, whose status is ${ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE].http}`;
  return null;
}

export function controlRestTarget(
  h: Harness,
  ops: readonly Operation[],
  creds: ControlCredentials,
): Target<ControlRequest> {
  return {
    name: 'control-rest',
    pure: false,
    arbitrary: controlRequest(ops.length),
    run: async (x) => {
      const req = buildControlRequest(ops, x);
      const headers: Record<string, string> = authHeader(x.as, creds);
      if (req.contentType !== null && req.payload !== undefined) headers['content-type'] = req.contentType;
      const res = await withTimeout(
        h.control.app.inject({
          method: req.method as 'GET',
          url: req.url,
          headers,
          ...(req.payload === undefined ? {} : { payload: req.payload }),
        }),
        `${req.method} ${req.url}`,
      );
      const problem = judgeControlAnswer(res.statusCode, res.body);
      if (problem !== null) return `${req.method} ${req.url}: ${problem}`;
      const ok = await h.control.app.inject({ url: '/api/v1/models', headers: authHeader('admin', creds) });
      return ok.statusCode === 200
        ? null
        : `GET /api/v1/models then answered ${ok.statusCode}: ${ok.body.slice(0, 200)}`;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The live feed

export interface FeedSession {
  readonly auth: 'subprotocol' | 'message' | 'none' | 'garbage';
  readonly messages: readonly ({ readonly text: string } | { readonly binary: Uint8Array })[];
}

const TOPICS = ['models', 'residency', 'queues', 'events', 'metrics'];

const feedMessage: fc.Arbitrary<{ text: string } | { binary: Uint8Array }> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .record({
        type: fc.oneof(fc.constantFrom('subscribe', 'unsubscribe', 'ping', 'auth'), fc.jsonValue()),
        topics: fc.option(
          fc.oneof(
            fc.array(fc.oneof(fc.constantFrom(...TOPICS), fc.constantFrom(...WEIRD_STRINGS), fc.jsonValue()), {
              maxLength: 4,
            }),
            fc.jsonValue(),
          ),
          { nil: undefined },
        ),
        since: fc.option(
          fc.oneof(
            fc.dictionary(
              fc.constantFrom(...TOPICS, '__proto__'),
              fc.oneof(fc.constantFrom(...WEIRD_NUMBERS), fc.jsonValue()),
            ),
            fc.jsonValue(),
          ),
          { nil: undefined },
        ),
        token: fc.option(fc.oneof(fc.string({ maxLength: 20 }), fc.jsonValue()), { nil: undefined }),
      })
      .map((m) => ({ text: JSON.stringify(m) })),
  },
  { weight: 2, arbitrary: fc.jsonValue().map((v) => ({ text: JSON.stringify(v) ?? 'null' })) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((text) => ({ text })) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 40 }).map((binary) => ({ binary })) },
);

export const feedSession: fc.Arbitrary<FeedSession> = fc.record({
  auth: fc.constantFrom('subprotocol', 'subprotocol', 'subprotocol', 'message', 'none', 'garbage'),
  messages: fc.array(feedMessage, { minLength: 1, maxLength: 4 }),
});

interface Heard {
  readonly messages: { type?: string; code?: unknown }[];
  close: { code: number; reason: string } | null;
}

function openFeed(url: string, protocols: string[]): Promise<{ ws: WebSocket; heard: Heard }> {
  const ws = new WebSocket(url, protocols);
  const heard: Heard = { messages: [], close: null };
  ws.on('message', (data: RawData) => {
    try {
      heard.messages.push(JSON.parse(String(data)) as { type?: string });
    } catch {
      heard.messages.push({ type: `unparsable: ${String(data).slice(0, 80)}` });
    }
  });
  ws.on('close', (code, reason) => (heard.close = { code, reason: String(reason) }));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, heard }));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
}

async function until(heard: Heard, done: (h: Heard) => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!done(heard) && Date.now() < end) await new Promise((r) => setTimeout(r, 2));
  return done(heard);
}

/** Close codes the feed may end a session with (docs/control-api.md), and a client's own close. */
const FEED_CLOSES = new Set([1000, 1005, 4400, 4401, 4403]);

export function feedTarget(url: string, creds: ControlCredentials): Target<FeedSession> {
  return {
    name: 'control-feed',
    pure: false,
    arbitrary: feedSession,
    run: async (s) => {
      const protocols =
        s.auth === 'subprotocol'
          ? ['hloserve.v1', `bearer.${creds.viewer}`]
          : s.auth === 'garbage'
            ? ['hloserve.v1', 'bearer.hlo_not_a_token']
            : ['hloserve.v1'];
      const { ws, heard } = await openFeed(url, protocols);
      try {
        if (s.auth === 'message') ws.send(JSON.stringify({ type: 'auth', token: creds.viewer }));
        for (const m of s.messages) ws.send('text' in m ? m.text : Buffer.from(m.binary), { binary: !('text' in m) });
        // A ping last: an open session answers it, a failed one has closed by then.
        ws.send(JSON.stringify({ type: 'ping' }));
        const settled = await until(
          heard,
          (h) => h.close !== null || h.messages.some((m) => m.type === 'pong'),
          HANG_MS,
        );
        if (!settled) return 'the session neither answered a ping nor closed';
        for (const m of heard.messages)
          if (m.type === 'error' && (typeof m.code !== 'string' || !CODES.has(m.code) || SERVER_FAULTS.has(m.code)))
            return `an error message with code ${String(m.code)}`;
        if (heard.close !== null && !FEED_CLOSES.has(heard.close.code))
          return `closed with ${heard.close.code} ${heard.close.reason}`;
      } finally {
        ws.terminate();
      }
      // The feed still serves a well-behaved client.
      const fresh = await openFeed(url, ['hloserve.v1', `bearer.${creds.viewer}`]);
      try {
        fresh.ws.send(JSON.stringify({ type: 'subscribe', topics: ['models'] }));
        const ok = await until(
          fresh.heard,
          (h) => h.messages.some((m) => (m as { kind?: string }).kind === 'snapshot'),
          HANG_MS,
        );
        return ok ? null : 'a fresh session then got no snapshot';
      } finally {
        fresh.ws.terminate();
      }
    },
  };
}
