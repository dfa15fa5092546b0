import assert from 'node:assert/strict';
import { readFileSync, rmSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import type { Worker } from '../../src/worker/worker.js';
import { adminToken, mint, startControl, startMlpWorker, tempDir, type Harness } from './harness.js';

type Who = 'none' | 'viewer' | 'operator' | 'admin' | 'expired' | 'revoked';
interface Route {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  readonly url: string | ((who: Who) => string);
  readonly scope: 'public' | 'viewer' | 'operator' | 'admin';
  readonly body?: unknown;
  /** A mutation: each allowed call writes exactly one audit record. */
  readonly mutation?: boolean;
}

// Every route of the API (the setup exchange has its own tests; the feed is in feed.test.ts).
const throwaway: string[] = [];
const ROUTES: Route[] = [
  { method: 'GET', url: '/api/v1/health', scope: 'public' },
  { method: 'GET', url: '/api/v1/openapi.json', scope: 'public' },
  { method: 'GET', url: '/api/v1/session', scope: 'viewer' },
  { method: 'GET', url: '/api/v1/workers', scope: 'viewer' },
  { method: 'GET', url: '/api/v1/models', scope: 'viewer' },
  { method: 'GET', url: '/api/v1/models/mlp', scope: 'viewer' },
  { method: 'GET', url: '/api/v1/models/mlp/metrics', scope: 'viewer' },
  { method: 'GET', url: '/api/v1/events', scope: 'viewer' },
  { method: 'GET', url: '/api/v1/settings', scope: 'viewer' },
  { method: 'GET', url: '/api/v1/models/mlp/io', scope: 'viewer' },
  { method: 'GET', url: '/api/v1/models/mlp/histograms', scope: 'viewer' },
  { method: 'GET', url: '/api/v1/models/mlp/versions', scope: 'viewer' },
  { method: 'GET', url: '/api/v1/queues', scope: 'viewer' },
  { method: 'GET', url: '/api/v1/audit', scope: 'operator' },
  { method: 'POST', url: '/api/v1/models/mlp/try', scope: 'operator' },
  { method: 'GET', url: '/api/v1/tokens', scope: 'admin' },
  { method: 'POST', url: '/api/v1/models/mlp/pin', scope: 'operator', body: { residency: 'device' }, mutation: true },
  { method: 'POST', url: '/api/v1/models/mlp/unpin', scope: 'operator', mutation: true },
  {
    method: 'PATCH',
    url: '/api/v1/models/mlp/policy',
    scope: 'operator',
    body: { weight: 2, maxQueueDelayUs: 500 },
    mutation: true,
  },
  { method: 'POST', url: '/api/v1/models/mlp/reload', scope: 'operator', mutation: true },
  { method: 'POST', url: '/api/v1/models/mlp/drain', scope: 'operator', mutation: true },
  { method: 'POST', url: '/api/v1/models/mlp/resume', scope: 'operator', mutation: true },
  { method: 'POST', url: '/api/v1/models/mlp/unload', scope: 'operator', mutation: true },
  { method: 'POST', url: '/api/v1/models/mlp/load', scope: 'operator', mutation: true },
  {
    method: 'POST',
    url: '/api/v1/models/mlp/rollback',
    scope: 'operator',
    body: { version: '1' },
    mutation: true,
  },
  { method: 'PATCH', url: '/api/v1/settings', scope: 'admin', body: { discipline: 'fair' }, mutation: true },
  { method: 'POST', url: '/api/v1/tokens', scope: 'admin', body: { name: 'extra', scope: 'viewer' }, mutation: true },
  {
    method: 'DELETE',
    url: (who) => `/api/v1/tokens/${who === 'admin' ? throwaway.shift() : throwaway[0]}`,
    scope: 'admin',
    mutation: true,
  },
];

const RANK = { public: -1, viewer: 0, operator: 1, admin: 2 } as const;

suite('control API routes (inject, real Worker, SQLite)', () => {
  let worker: Worker;
  let h: Harness;
  let dir: string;
  let clock = Date.now();
  const tokens = {} as Record<Exclude<Who, 'none'>, string>;
  before(async () => {
    dir = tempDir();
    worker = await startMlpWorker();
    h = await startControl(worker, dir, { now: () => clock });
  });
  after(async () => {
    await h?.close();
    await worker?.stop(false);
    rmSync(dir, { recursive: true, force: true });
  });

  const call = (r: Route, who: Who, headers: Record<string, string> = {}) =>
    h.control.app.inject({
      method: r.method,
      url: typeof r.url === 'function' ? r.url(who) : r.url,
      headers: { ...(who === 'none' ? {} : { authorization: `Bearer ${tokens[who]}` }), ...headers },
      ...(r.body !== undefined ? { payload: r.body as object } : {}),
    });
  const auditCount = async () => (await h.store.listAudit({ limit: 10_000 })).length;

  test('first start: a setup token printed and written 0600; exchanged once for an admin token', async () => {
    const file = join(dir, 'console-setup-token');
    assert.ok(h.control.setupToken?.startsWith('hlo_setup_'));
    assert.equal(readFileSync(file, 'utf8').trim(), h.control.setupToken);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const bad = await h.control.app.inject({
      method: 'POST',
      url: '/api/v1/setup',
      payload: { setupToken: 'hlo_setup_wrong' },
    });
    assert.equal(bad.statusCode, 401);
    assert.equal(bad.json().code, 'HLO_ERR_UNAUTHENTICATED');
    tokens.admin = await adminToken(h);
    assert.equal(existsSync(file), false, 'the file goes once used');
    const again = await h.control.app.inject({
      method: 'POST',
      url: '/api/v1/setup',
      payload: { setupToken: h.control.setupToken },
    });
    assert.equal(again.statusCode, 401, 'single use');
    const rows = await h.store.listAudit({ limit: 10 });
    assert.deepEqual(
      rows.map((r) => [r.actor, r.action, r.result]),
      [['setup', 'auth.setup', 'ok']],
    );
    assert.doesNotMatch(rows[0]!.response!, /hlo_[0-9a-f]{12}_/, 'the minted token is not kept in the audit');
  });

  test('tokens are stored hashed, never as text', async () => {
    tokens.viewer = (await mint(h, tokens.admin, 'viewer')).token;
    tokens.operator = (await mint(h, tokens.admin, 'operator')).token;
    tokens.expired = (await mint(h, tokens.admin, 'admin', 1)).token;
    const revoked = await mint(h, tokens.admin, 'admin');
    tokens.revoked = revoked.token;
    const del = await h.control.app.inject({
      method: 'DELETE',
      url: `/api/v1/tokens/${revoked.id}`,
      headers: { authorization: `Bearer ${tokens.admin}` },
    });
    assert.equal(del.statusCode, 200);
    clock += 2000; // past the expired token's one second
    for (let i = 0; i < 2; i++) throwaway.push((await mint(h, tokens.admin, 'viewer')).id);
    const rows = await h.store.listTokens();
    for (const t of Object.values(tokens)) for (const r of rows) assert.notEqual(r.hash, t);
    for (const r of rows) assert.match(r.hash, /^[0-9a-f]{64}$/);
  });

  test('the auth matrix: every route x (none, viewer, operator, admin, expired, revoked); one audit record per allowed mutation', async () => {
    for (const r of ROUTES) {
      for (const who of ['none', 'expired', 'revoked', 'viewer', 'operator', 'admin'] as const) {
        const before = await auditCount();
        const res = await call(r, who);
        const where = `${r.method} ${typeof r.url === 'string' ? r.url : '/api/v1/tokens/:id'} as ${who}`;
        if (r.scope === 'public') {
          assert.equal(res.statusCode, 200, where);
          continue;
        }
        if (who === 'none' || who === 'expired' || who === 'revoked') {
          assert.equal(res.statusCode, 401, `${where}: ${res.body}`);
          assert.equal(res.json().code, 'HLO_ERR_UNAUTHENTICATED');
          if (who !== 'none') assert.match(res.json().error, who === 'expired' ? /expired/ : /revoked/);
        } else if (RANK[who] < RANK[r.scope]) {
          assert.equal(res.statusCode, 403, `${where}: ${res.body}`);
          assert.equal(res.json().code, 'HLO_ERR_PERMISSION_DENIED');
        } else {
          assert.ok(
            res.statusCode !== 401 && res.statusCode !== 403 && res.statusCode < 500,
            `${where}: ${res.statusCode} ${res.body}`,
          );
        }
        const allowedMutation =
          r.mutation && who !== 'none' && who !== 'expired' && who !== 'revoked' && RANK[who] >= RANK[r.scope];
        assert.equal((await auditCount()) - before, allowedMutation ? 1 : 0, `${where}: audit records`);
      }
    }
  });

  test('audit records say who, what, before -> after and the result', async () => {
    const unknown = await call(
      { method: 'POST', url: '/api/v1/models/no-such-model/drain', scope: 'operator' },
      'operator',
    );
    assert.equal(unknown.statusCode, 404);
    const res = await h.control.app.inject({
      method: 'GET',
      url: '/api/v1/audit?limit=200',
      headers: { authorization: `Bearer ${tokens.operator}` },
    });
    const rows = res.json().data as {
      actor: string;
      action: string;
      target: string;
      before: unknown;
      after: unknown;
      result: string;
    }[];
    const pin = rows.find((r) => r.action === 'model.pin')!;
    assert.match(pin.actor, /^token:[0-9a-f]{12}$/);
    assert.equal(pin.target, 'model:mlp');
    assert.equal((pin.after as { residency: string }).residency, 'device');
    const drain = rows.find((r) => r.action === 'model.drain' && r.target === 'model:mlp' && r.result === 'ok')!;
    assert.deepEqual(drain.after, { state: 'READY', version: '1', draining: true });
    const refused = rows.find((r) => r.action === 'model.drain' && r.target === 'model:no-such-model')!;
    assert.equal(refused.result, 'HLO_ERR_MODEL_NOT_FOUND', 'refused actions are audited with their reason');
  });

  test('idempotent retries: the same Idempotency-Key runs once, is audited once, and replays the answer', async () => {
    const r: Route = { method: 'PATCH', url: '/api/v1/models/mlp/policy', scope: 'operator', body: { weight: 3 } };
    const before = await auditCount();
    const key = { 'idempotency-key': 'retry-1' };
    const [a, b] = await Promise.all([call(r, 'operator', key), call(r, 'operator', key)]);
    const c = await call(r, 'operator', key);
    for (const x of [a, b, c]) assert.equal(x.statusCode, 200, x.body);
    assert.equal([a, b, c].filter((x) => x.headers['idempotent-replay'] === 'true').length, 2);
    assert.deepEqual(a.json().data.policy, c.json().data.policy);
    assert.equal((await auditCount()) - before, 1);
    const other = await call(
      { ...r, url: '/api/v1/models/mlp/unpin', body: undefined, method: 'POST' },
      'operator',
      key,
    );
    assert.equal(other.statusCode, 409, 'a key reused for another action is refused');
    assert.equal((await auditCount()) - before, 1);
    const otherActor = await call(r, 'admin', key);
    assert.equal(otherActor.headers['idempotent-replay'], undefined, 'keys are per actor');
  });

  test('models and workers: the residency, policy and device memory the console shows', async () => {
    const auth = { authorization: `Bearer ${tokens.viewer}` };
    const m = (await h.control.app.inject({ url: '/api/v1/models/mlp', headers: auth })).json().data;
    assert.equal(m.state, 'READY');
    assert.deepEqual(m.batchSizes, [1, 4, 8, 16, 32]);
    assert.equal(m.policy.weight, 3);
    assert.equal(m.residency.weightBytes > 0, true);
    const w = (await h.control.app.inject({ url: '/api/v1/workers', headers: auth })).json().data[0];
    for (const k of ['totalBytes', 'budgetBytes', 'residentBytes', 'pinnedBytes', 'arenaBytes', 'freeBytes'])
      assert.ok(k in w.devices[0], k);
    const missing = await h.control.app.inject({ url: '/api/v1/models/nope', headers: auth });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().code, 'HLO_ERR_MODEL_NOT_FOUND');
  });

  test('bad input: schema violations answer 400 INVALID_ARGUMENT naming the field; unknown routes 404', async () => {
    const auth = { authorization: `Bearer ${tokens.operator}` };
    const bad = await h.control.app.inject({
      method: 'PATCH',
      url: '/api/v1/models/mlp/policy',
      headers: auth,
      payload: { weight: -1 },
    });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().code, 'HLO_ERR_INVALID_ARGUMENT');
    assert.match(bad.json().error, /weight/);
    const pin = await h.control.app.inject({
      method: 'POST',
      url: '/api/v1/models/mlp/pin',
      headers: auth,
      payload: { residency: 'moon' },
    });
    assert.equal(pin.statusCode, 400);
    const nf = await h.control.app.inject({ url: '/api/v1/nothing', headers: auth });
    assert.equal(nf.statusCode, 404);
    assert.equal(nf.json().code, 'HLO_ERR_NOT_FOUND');
  });

  test("the router's refusals (a segment past its limit, a bad percent-encoding) are catalogue errors", async () => {
    const auth = { authorization: `Bearer ${tokens.operator}` };
    // Past Fastify's default limit (100) the router answered 414 with its own code,
    // FST_ERR_MAX_PARAM_LENGTH; the control port now routes what the KServe port routes (1024).
    const named = await h.control.app.inject({ url: `/api/v1/models/${'m'.repeat(150)}`, headers: auth });
    assert.equal(named.statusCode, 404);
    assert.equal(named.json().code, 'HLO_ERR_MODEL_NOT_FOUND');
    const past = await h.control.app.inject({
      method: 'POST',
      url: `/api/v1/models/${'m'.repeat(1025)}/pin`,
      headers: auth,
      payload: {},
    });
    assert.equal(past.statusCode, 400);
    assert.equal(past.json().code, 'HLO_ERR_INVALID_ARGUMENT');
    const badEscape = await h.control.app.inject({ method: 'POST', url: '/api/v1/models/%zz/pin', headers: auth });
    assert.equal(badEscape.statusCode, 400);
    assert.equal(badEscape.json().code, 'HLO_ERR_INVALID_ARGUMENT');
  });

  test('the OpenAPI document lists every route with its schema', async () => {
    const doc = (await h.control.app.inject({ url: '/api/v1/openapi.json' })).json();
    for (const r of ROUTES) {
      if (typeof r.url !== 'string' || r.url.endsWith('openapi.json')) continue;
      const path = r.url.replace('/mlp', '/{name}');
      assert.ok(doc.paths[path]?.[r.method.toLowerCase()], `${r.method} ${path}`);
    }
    assert.ok(doc.paths['/api/v1/tokens/{id}'].delete);
    // The other way round: a route added without a row in the matrix fails here. These are
    // tested in their own suites (setup exchange above, uploads, the live feed).
    const elsewhere = ['/api/v1/setup', '/api/v1/stream', '/api/v1/uploads', '/api/v1/tokens/{id}'];
    const inMatrix = new Set(
      ROUTES.filter((r) => typeof r.url === 'string').map(
        (r) => `${r.method.toLowerCase()} ${(r.url as string).replace('/mlp', '/{name}')}`,
      ),
    );
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      if (elsewhere.some((e) => path.startsWith(e))) continue;
      for (const m of Object.keys(ops)) assert.ok(inMatrix.has(`${m} ${path}`), `${m} ${path} is in the auth matrix`);
    }
    assert.ok(doc.paths['/api/v1/models/{name}'].get.responses['200'].content['application/json'].schema);
  });
});
