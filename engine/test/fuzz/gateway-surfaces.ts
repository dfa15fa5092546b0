import { request } from 'node:http';
import fc from 'fast-check';
import { ERROR_CATALOGUE } from '@hloserve/common/errors';
import { httpBinary, httpJson, validJson, type HttpInput, type Target } from './surfaces.js';

/**
 * The gateway's KServe HTTP port in front of a real worker (the fuzz surface's, listening): paths
 * of every shape the proxy routes by (per model, repository, shared memory, health) with odd names,
 * methods and headers, carrying the inference bodies of surfaces.ts. Whatever answers, the gateway
 * itself or the worker through it, must answer in the catalogue, and a valid inference through the
 * gateway must succeed right after.
 */

const HTTP_CODES = new Set<number>([200, ...Object.values(ERROR_CATALOGUE).map((s) => s.http)]);
const CODES = new Set<string>(Object.keys(ERROR_CATALOGUE));
const HANG_MS = 15_000;

export interface GatewayRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  readonly path: string;
  readonly timeout: string | null;
  readonly contentType: string | null;
  readonly input: HttpInput;
}

const name = fc.oneof(
  { weight: 6, arbitrary: fc.constant('mlp') },
  { weight: 1, arbitrary: fc.constantFrom('nope', '%zz', '%', '..', '%2F', 'a'.repeat(2000), 'stats', '') },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }).map(encodeURIComponent) },
);

const path = fc.oneof(
  { weight: 6, arbitrary: name.map((m) => `/v2/models/${m}/infer`) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(name, fc.constantFrom('1', '', '%00', '2'))
      .map(([m, v]) => `/v2/models/${m}/versions/${v}/infer`),
  },
  { weight: 1, arbitrary: name.map((m) => `/v2/models/${m}`) },
  { weight: 1, arbitrary: name.map((m) => `/v2/models/${m}/ready`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '/v2/repository/index',
      '/v2/health/ready',
      '/v2/health/live',
      '/v2',
      '/',
      '/v2/models/stats',
    ),
  },
  { weight: 1, arbitrary: name.map((m) => `/v2/repository/models/${m}/load`) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(name, fc.constantFrom('register', 'unregister', 'status'))
      .map(([r, op]) => `/v2/systemsharedmemory/region/${r}/${op}`),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }).map((p) => `/${encodeURI(p.replace(/[\ud800-\udfff]/g, ''))}`) },
);

export const gatewayRequest: fc.Arbitrary<GatewayRequest> = fc.record({
  method: fc.constantFrom('POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE'),
  path,
  timeout: fc.option(fc.constantFrom('1', '60000', '0', '-5', 'soon', '1e400', '99999999999999'), { nil: null }),
  contentType: fc.option(fc.constantFrom('application/json', 'application/octet-stream', 'text/plain'), { nil: null }),
  input: fc.oneof(httpJson, httpBinary),
});

interface Answer {
  readonly status: number;
  readonly body: string;
}

function send(port: number, r: GatewayRequest): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (r.timeout !== null) headers['x-timeout-ms'] = r.timeout;
  if (r.contentType !== null) headers['content-type'] = r.contentType;
  if (r.input.headerLength !== undefined) headers['inference-header-content-length'] = r.input.headerLength;
  // Framed for every method: Node's client sends a GET's or DELETE's body unframed otherwise, and
  // the server rightly reads those bytes as a malformed next request (tested on its own, in
  // gateway/test/http-errors.test.ts).
  headers['content-length'] = String(r.input.body.byteLength);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`hang: ${r.method} ${r.path} unanswered after ${HANG_MS} ms`)),
      HANG_MS,
    );
    // A connection each, so no request's answer (a 413 closes its connection) touches the next.
    const req = request({ host: '127.0.0.1', port, method: r.method, path: r.path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.end(Buffer.from(r.input.body));
  });
}

/** The verdict on one answer; health and readiness answer by status alone (KServe's 200 or 400, no body). */
export function judgeGatewayAnswer(r: GatewayRequest, a: Answer): string | null {
  if (!HTTP_CODES.has(a.status)) return `HTTP ${a.status} is outside the catalogue: ${a.body.slice(0, 200)}`;
  if (a.status === 200) return null;
  if (a.body === '' && /\/(ready|live)$/.test(r.path.split('?')[0]!) && a.status === 400) return null;
  let code: unknown;
  try {
    code = (JSON.parse(a.body) as { code?: unknown }).code;
  } catch {
    return `HTTP ${a.status} without a JSON error body: ${a.body.slice(0, 200)}`;
  }
  if (typeof code !== 'string' || !CODES.has(code))
    return `HTTP ${a.status} with code ${String(code)}: ${a.body.slice(0, 200)}`;
  if (code === 'HLO_ERR_INTERNAL') return `HTTP ${a.status} ${code}: ${a.body.slice(0, 200)}`;
  return null;
}

export function gatewayHttpTarget(port: number): Target<GatewayRequest> {
  return {
    name: 'gateway-http',
    pure: false,
    arbitrary: gatewayRequest,
    run: async (r) => {
      let a: Answer;
      try {
        a = await send(port, r);
      } catch (e) {
        return `${r.method} ${r.path}: ${(e as Error).message}`;
      }
      const problem = judgeGatewayAnswer(r, a);
      if (problem !== null) return `${r.method} ${r.path}: ${problem}`;
      const ok = await send(port, {
        method: 'POST',
        path: '/v2/models/mlp/infer',
        timeout: null,
        contentType: 'application/json',
        input: { body: validJson },
      });
      return ok.status === 200
        ? null
        : `a valid inference through the gateway then failed: ${ok.status} ${ok.body.slice(0, 200)}`;
    },
  };
}
