/**
 * The gateway's console port against stand-in workers: the placement view (models x workers,
 * desired against actual), the actions and their audit, auth decided by the console worker's
 * /api/v1/session, and everything else passed through to that worker.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { after, before, suite, test } from 'node:test';
import type { Server as GrpcServer } from '@grpc/grpc-js';
import { serveGateway, type RunningGateway } from '@hloserve/gateway';
import { standInGrpc } from '@hloserve/gateway/testing/stand-in-grpc';

const TOKENS: Record<string, { actor: string; name: string; scope: string }> = {
  'Bearer view': { actor: 'token:v', name: 'viewer-token', scope: 'viewer' },
  'Bearer op': { actor: 'token:o', name: 'operator-token', scope: 'operator' },
};

interface StandIn {
  grpc: GrpcServer;
  grpcPort: number;
  http: Server;
  httpPort: number;
  resident: string[];
}

/** A worker: gRPC health and index for the fleet, and one HTTP port serving /metrics and the console. */
async function standIn(name: string, models: string[], resident: string[]): Promise<StandIn> {
  const { grpc, grpcPort } = await standInGrpc(models);
  const s: StandIn = { grpc, grpcPort, http: null as unknown as Server, httpPort: 0, resident };
  s.http = createServer((req, res) => {
    if (req.url === '/metrics') {
      res.end(s.resident.map((m) => `hloserve_model_resident{model="${m}"} 1\n`).join(''));
    } else if (req.url === '/api/v1/session') {
      const p = TOKENS[req.headers.authorization ?? ''];
      res.writeHead(p ? 200 : 401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(p ? { data: { ...p, tokenId: null } } : { error: 'no token', code: 'HLO_ERR_UNAUTHENTICATED' }),
      );
    } else if (req.headers.authorization === 'Bearer not-here') {
      // This worker's own refusal, which the gateway must pass back as it is.
      res.writeHead(401, { 'content-type': 'application/json', 'x-worker': name });
      res.end(JSON.stringify({ error: `${name} does not know this token`, code: 'HLO_ERR_UNAUTHENTICATED' }));
    } else {
      res.writeHead(200, { 'content-type': 'application/json', 'x-worker': name });
      res.end(JSON.stringify({ data: { worker: name, path: req.url, auth: req.headers.authorization ?? null } }));
    }
  });
  // The live feed's upgrade: answered with who took it and the path it saw, then closed.
  s.http.on('upgrade', (req, socket) => {
    socket.end(`HTTP/1.1 101 Switching Protocols\r\nx-worker: ${name}\r\nx-path: ${req.url}\r\n\r\n`);
  });
  s.httpPort = await new Promise<number>((r) =>
    s.http.listen(0, '127.0.0.1', () => r((s.http.address() as { port: number }).port)),
  );
  return s;
}

suite('a placement store that cannot be read at start', () => {
  test('serveGateway rejects with its error and leaves nothing running', async () => {
    const w = await standIn('w0', ['a'], []);
    try {
      const state = {
        load: () => Promise.reject(new Error('store unreachable')),
        save: () => Promise.reject(new Error('unused')),
        listAudit: () => Promise.resolve([]),
      };
      await assert.rejects(
        serveGateway(
          {
            workers: [
              {
                name: 'w0',
                address: { grpc: `127.0.0.1:${w.grpcPort}`, http: '127.0.0.1:1', metrics: null, console: null },
              },
            ],
            mode: 'lpt_packing',
            state,
          },
          { host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1, consolePort: -1 },
        ),
        /store unreachable/,
      );
    } finally {
      w.grpc.forceShutdown();
      w.http.close();
    }
  });
});

suite('the gateway console port: placements, actions, audit, pass-through', () => {
  let ws: StandIn[];
  let gw: RunningGateway;
  let base: string;
  const audits: unknown[] = [];
  const call = async (method: string, path: string, token?: string, body?: unknown) => {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };

  before(async () => {
    ws = [
      await standIn('w0', ['a', 'b', 'c'], ['a']),
      await standIn('w1', ['a', 'b', 'c'], ['b']),
      await standIn('w2', ['a', 'b', 'c'], []),
    ];
    gw = await serveGateway(
      {
        workers: ws.map((w, i) => ({
          name: `w${i}`,
          address: {
            grpc: `127.0.0.1:${w.grpcPort}`,
            http: '127.0.0.1:1',
            metrics: `127.0.0.1:${w.httpPort}`,
            console: `127.0.0.1:${w.httpPort}`,
          },
        })),
        mode: 'lpt_packing',
        healthIntervalMs: 60_000,
        placementIntervalMs: 60_000,
      },
      { host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1, consolePort: 0 },
      (msg, f) => {
        if (msg === 'audit') audits.push(f);
      },
    );
    base = `http://127.0.0.1:${gw.ports.console}`;
  });
  after(async () => {
    await gw.stop();
    for (const w of ws) {
      w.grpc.forceShutdown();
      w.http.close();
    }
  });

  test('without a token the placements are 401; a viewer reads models x workers, desired against actual', async () => {
    assert.equal((await call('GET', '/api/v1/placements')).status, 401);
    assert.equal((await call('GET', '/api/v1/placements', 'forged')).status, 401);
    const r = await call('GET', '/api/v1/placements', 'view');
    assert.equal(r.status, 200);
    const v = r.body.data;
    assert.equal(v.fleet, true);
    assert.equal(v.mode, 'lpt_packing');
    assert.equal(v.actions, true);
    assert.deepEqual(
      v.workers.map((w: { name: string }) => w.name),
      ['w0', 'w1', 'w2'],
    );
    assert.deepEqual(
      v.models.map((m: { name: string }) => m.name),
      ['a', 'b', 'c'],
    );
    // Startup packing spreads three equally-assumed models over three workers, one each.
    const placedOn = v.models.map((m: { placed: string[] }) => m.placed);
    assert.deepEqual(placedOn.flat().sort(), ['w0', 'w1', 'w2']);
    const a = v.models[0];
    assert.equal(a.desiredReplicas, 1);
    assert.deepEqual(a.residentOn, ['w0']);
    assert.equal(a.cells.length, 3);
    assert.ok(a.cells.every((c: { ready: boolean }) => c.ready));
    // One replica takes all of its model's traffic; the other cells none.
    assert.deepEqual(a.cells.map((c: { placed: boolean; weight: number }) => [c.placed, c.weight]).sort(), [
      [false, 0],
      [false, 0],
      [true, 1],
    ]);
  });

  test('a viewer may not act (403); an operator adds a replica, moves it, releases it, each audited', async () => {
    assert.equal((await call('POST', '/api/v1/placements/a/add_replica', 'view')).status, 403);
    const add = await call('POST', '/api/v1/placements/a/add_replica', 'op');
    assert.equal(add.status, 200, JSON.stringify(add.body));
    const change = add.body.data.change;
    assert.equal(change.before.replicas, 1);
    assert.equal(change.after.replicas, 2);
    assert.equal(change.after.workers.length, 2);
    assert.deepEqual(
      gw.gateway.router.placement().get('a')?.workers.length,
      2,
      'the router sends a to two workers now',
    );
    // The view and /metrics read the weights from the router, their one owner.
    const view = (await call('GET', '/api/v1/placements', 'view')).body.data;
    const cells = view.models.find((m: { name: string }) => m.name === 'a').cells;
    const routed = gw.gateway.router.placement().get('a')!;
    const weights = new Map<string, number>();
    routed.workers.forEach((w, i) => weights.set(w, routed.weights[i]!));
    for (const c of cells as { worker: string; weight: number }[]) assert.equal(c.weight, weights.get(c.worker) ?? 0);
    assert.ok(Math.abs(routed.weights.reduce((x, y) => x + y, 0) - 1) < 1e-9);
    const gauge = [
      ...(await gw.gateway.metricsText()).matchAll(
        /^hloserve_gateway_placement_weight\{model="a",worker="(\w+)"\} (\S+)/gm,
      ),
    ];
    assert.deepEqual(
      gauge.map((m) => [m[1], Number(m[2])]),
      routed.workers.map((w, i) => [w, routed.weights[i]]),
    );

    const from = change.after.workers[0];
    const to = ['w0', 'w1', 'w2'].find((w) => !change.after.workers.includes(w))!;
    const mv = await call('POST', '/api/v1/placements/a/move', 'op', { from, to });
    assert.equal(mv.status, 200, JSON.stringify(mv.body));
    assert.ok(mv.body.data.change.after.workers.includes(to));
    assert.ok(!mv.body.data.change.after.workers.includes(from));
    assert.equal(mv.body.data.change.after.pinned, true);
    // A repack keeps the pin.
    await gw.gateway.placementTick(true);
    assert.deepEqual(
      [...gw.gateway.router.placement().get('a')!.workers].sort(),
      [...mv.body.data.change.after.workers].sort(),
    );

    const rm = await call('POST', '/api/v1/placements/a/remove_replica', 'op');
    assert.equal(rm.body.data.change.after.replicas, 1);
    const rel = await call('POST', '/api/v1/placements/a/release', 'op');
    assert.equal(rel.body.data.change.after.pinned, false);

    const log = await call('GET', '/api/v1/placements/audit', 'view');
    assert.deepEqual(
      log.body.data.map((e: { action: string }) => e.action),
      ['placement.release', 'placement.remove_replica', 'placement.move', 'placement.add_replica'],
    );
    assert.equal(log.body.data[0].actor, 'token:o');
    assert.equal(audits.length, 4, 'each action written once as a log record');
  });

  test('bad actions answer with the catalogue: unknown model, unknown action, impossible moves, last replica', async () => {
    const unknownModel = await call('POST', '/api/v1/placements/zz/add_replica', 'op');
    assert.equal(unknownModel.status, 404);
    assert.equal(unknownModel.body.code, 'HLO_ERR_MODEL_NOT_FOUND');
    assert.equal((await call('POST', '/api/v1/placements/a/explode', 'op')).status, 404);
    assert.equal((await call('POST', '/api/v1/placements/a/move', 'op', { from: 'w0' })).status, 400);
    const last = await call('POST', '/api/v1/placements/b/remove_replica', 'op');
    assert.equal(last.body.code, 'HLO_ERR_FAILED_PRECONDITION');
    const placedB = gw.gateway.router.placement().get('b')!.workers[0]!;
    const already = await call('POST', '/api/v1/placements/b/move', 'op', { from: placedB, to: placedB });
    assert.equal(already.body.code, 'HLO_ERR_FAILED_PRECONDITION');
  });

  test('bad input answers 400 with a clear error, changes nothing, and the gateway keeps serving', async () => {
    const before = await call('GET', '/api/v1/placements', 'view');
    const raw = async (path: string, body: string) => {
      const r = await fetch(base + path, {
        method: 'POST',
        headers: { authorization: 'Bearer op', 'content-type': 'application/json' },
        body,
      });
      return { status: r.status, body: (await r.json()) as { error: string; code: string } };
    };
    const cases: [string, string, RegExp][] = [
      ['/api/v1/placements/a/move', '{"from": ', /not JSON/],
      ['/api/v1/placements/a/move', 'null', /must be a JSON object/],
      ['/api/v1/placements/a/move', '["w0","w1"]', /must be a JSON object/],
      ['/api/v1/placements/a/move', '{"from": 5, "to": "w1"}', /"from" must be a worker name/],
      ['/api/v1/placements/a/move', '{"from": "w0", "to": ""}', /"to" must be a worker name/],
      ['/api/v1/placements/a/add_replica', '{"replicas": 3}', /unknown field 'replicas'/],
      ['/api/v1/placements/%E0%A4%A/add_replica', '', /not valid percent-encoding/],
    ];
    for (const [path, body, message] of cases) {
      const r = await raw(path, body);
      assert.equal(r.status, 400, `${path} ${body}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, 'HLO_ERR_INVALID_ARGUMENT');
      assert.match(r.body.error, message);
    }
    const after = await call('GET', '/api/v1/placements', 'view');
    assert.equal(after.status, 200);
    assert.deepEqual(after.body.data.models, before.body.data.models, 'nothing changed');
    assert.equal(after.body.seq, before.body.seq, 'no repack');
  });

  test('a store that fails to save: 500, the change undone, the audit without it', async () => {
    const state = gw.gateway.state as { save: (...a: unknown[]) => Promise<unknown> };
    const save = state.save;
    state.save = () => Promise.reject(new Error('disk full'));
    try {
      const auditBefore = (await call('GET', '/api/v1/placements/audit', 'view')).body.data.length;
      const r = await call('POST', '/api/v1/placements/b/add_replica', 'op');
      assert.equal(r.status, 500);
      assert.match(r.body.error, /could not be stored, so it was undone: disk full/);
      // The undo repacks, which may place b elsewhere by load; what it must restore is one replica.
      assert.equal(gw.gateway.router.placement().get('b')!.workers.length, 1);
      assert.equal(gw.gateway.placement.desiredReplicas('b', 3), 1);
      assert.equal((await call('GET', '/api/v1/placements/audit', 'view')).body.data.length, auditBefore);
    } finally {
      state.save = save;
    }
  });

  test('an Idempotency-Key replays the first answer instead of acting twice', async () => {
    const once = () =>
      fetch(`${base}/api/v1/placements/c/add_replica`, {
        method: 'POST',
        headers: { authorization: 'Bearer op', 'idempotency-key': 'k1' },
      }).then((r) => r.json() as Promise<{ data: { change: { after: { replicas: number } }; audit: number } }>);
    const [x, y] = [await once(), await once()];
    assert.deepEqual(y, x);
    assert.equal(x.data.change.after.replicas, 2);
  });

  test('other paths pass through to the first ready worker with a console, token and all', async () => {
    const r = await call('GET', '/api/v1/models?x=1', 'view');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.data, { worker: 'w0', path: '/api/v1/models?x=1', auth: 'Bearer view' });
  });

  /** A WebSocket upgrade through the gateway: the head of whatever answers it. */
  const upgrade = (path: string) =>
    new Promise<string>((resolve, reject) => {
      const sock = connect(Number(new URL(base).port), '127.0.0.1', () =>
        sock.write(
          `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
            'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
        ),
      );
      let got = '';
      sock.on('data', (c: Buffer) => (got += c.toString('latin1')));
      sock.on('end', () => resolve(got));
      sock.on('close', () => resolve(got));
      sock.on('error', reject);
    });

  test('a request that names a worker (query or header) goes to that worker, without the parameter', async () => {
    const q = await call('GET', '/api/v1/models?worker=w1&x=1', 'view');
    assert.equal(q.status, 200);
    assert.deepEqual(q.body.data, { worker: 'w1', path: '/api/v1/models?x=1', auth: 'Bearer view' });
    const only = await call('GET', '/api/v1/queues?worker=w2', 'view');
    assert.deepEqual(only.body.data, { worker: 'w2', path: '/api/v1/queues', auth: 'Bearer view' });
    const h = await fetch(`${base}/api/v1/workers`, { headers: { 'x-hloserve-worker': 'w2' } });
    assert.equal(((await h.json()) as { data: { worker: string } }).data.worker, 'w2');
    // A body reaches the named worker too.
    const post = await fetch(`${base}/api/v1/models/a/pin?worker=w1`, {
      method: 'POST',
      headers: { authorization: 'Bearer op', 'content-type': 'application/json' },
      body: '{"residency":"pinned"}',
    });
    assert.equal(((await post.json()) as { data: { worker: string } }).data.worker, 'w1');
    const dflt = await call('GET', '/api/v1/models', 'view');
    assert.equal(dflt.body.data.worker, 'w0', 'no name: the first ready worker, as before');
  });

  test('the live feed goes to the worker its query names; no name, the default', async () => {
    assert.match(
      await upgrade('/api/v1/stream?worker=w2'),
      /^HTTP\/1\.1 101[^]*x-worker: w2\r\nx-path: \/api\/v1\/stream\r\n/,
    );
    assert.match(await upgrade('/api/v1/stream'), /x-worker: w0\r\n/);
  });

  test('the placement view lists every worker the console can pick, with whether it has a console', async () => {
    const v = (await call('GET', '/api/v1/placements', 'view')).body.data;
    assert.deepEqual(
      v.workers.map((w: { name: string; ready: boolean; console: boolean }) => [w.name, w.ready, w.console]),
      [
        ['w0', true, true],
        ['w1', true, true],
        ['w2', true, true],
      ],
    );
  });

  test('a bad, unknown or unready worker: 400, 404, 503 from the catalogue, REST and feed alike, and serving goes on', async () => {
    const w2 = gw.gateway.fleet.workers.get('w2')!;
    const cases: [string, number, string, RegExp][] = [
      ['?worker=', 400, 'HLO_ERR_INVALID_ARGUMENT', /'' is not a worker name/],
      [`?worker=${'w'.repeat(65)}`, 400, 'HLO_ERR_INVALID_ARGUMENT', /is not a worker name/],
      ['?worker=w0%2F..%2Fx', 400, 'HLO_ERR_INVALID_ARGUMENT', /is not a worker name/],
      ['?worker=%3Cscript%3E', 400, 'HLO_ERR_INVALID_ARGUMENT', /is not a worker name/],
      ['?worker=w0&worker=w1', 400, 'HLO_ERR_INVALID_ARGUMENT', /given 2 times/],
      ['?worker=w9', 404, 'HLO_ERR_NOT_FOUND', /no worker 'w9' in this fleet \(workers: w0, w1, w2\)/],
      ['?worker=w2', 503, 'HLO_ERR_SHUTTING_DOWN', /worker 'w2' is not ready/],
    ];
    w2.ready = false;
    try {
      for (const [query, status, code, message] of cases) {
        for (const path of ['/api/v1/models', '/api/v1/placements']) {
          const r = await call('GET', path + query, 'view');
          assert.equal(r.status, status, `${path}${query}: ${JSON.stringify(r.body)}`);
          assert.equal(r.body.code, code);
          assert.match(r.body.error, message);
        }
        const ws = await upgrade(`/api/v1/stream${query}`);
        assert.match(ws, new RegExp(`^HTTP/1\\.1 ${status} `), `feed ${query}`);
        assert.match(ws, new RegExp(code));
        // Still serving: the default worker and a named one.
        assert.equal((await call('GET', '/api/v1/models', 'view')).body.data.worker, 'w0');
        assert.equal((await call('GET', '/api/v1/models?worker=w1', 'view')).body.data.worker, 'w1');
      }
      const bad = await fetch(`${base}/api/v1/models`, { headers: { 'x-hloserve-worker': 'a b' } });
      assert.equal(bad.status, 400);
    } finally {
      w2.ready = true;
    }
    assert.equal((await call('GET', '/api/v1/models?worker=w2', 'view')).body.data.worker, 'w2', 'ready again, served');
  });

  test("the named worker's refusal of a token comes back as it is", async () => {
    const r = await call('GET', '/api/v1/tokens?worker=w1', 'not-here');
    assert.equal(r.status, 401);
    assert.deepEqual(r.body, { error: 'w1 does not know this token', code: 'HLO_ERR_UNAUTHENTICATED' });
  });

  test('a worker without a console port: 503 for its screens, listed without a console, others still served', async () => {
    const w2 = ws[2]!;
    gw.gateway.setWorker({
      name: 'w3',
      address: { grpc: `127.0.0.1:${w2.grpcPort}`, http: '127.0.0.1:1', metrics: null, console: null },
    });
    const r = await call('GET', '/api/v1/models?worker=w3', 'view');
    assert.equal(r.status, 503);
    assert.equal(r.body.code, 'HLO_ERR_SHUTTING_DOWN');
    assert.match(r.body.error, /worker 'w3' has no console port/);
    const v = (await call('GET', '/api/v1/placements', 'view')).body.data;
    assert.equal(v.workers.find((w: { name: string }) => w.name === 'w3').console, false);
    assert.equal((await call('GET', '/api/v1/models?worker=w2', 'view')).body.data.worker, 'w2');
  });

  test("a console worker that does not answer: 503 from the catalogue for the gateway's own routes too, not 500", async () => {
    const w2 = ws[2]!;
    // Ready by its gRPC health; nothing listens on its console port.
    gw.gateway.setWorker({
      name: 'w4',
      address: { grpc: `127.0.0.1:${w2.grpcPort}`, http: '127.0.0.1:1', metrics: null, console: '127.0.0.1:1' },
    });
    gw.gateway.fleet.workers.get('w4')!.ready = true;
    for (const [method, path] of [
      ['GET', '/api/v1/placements?worker=w4'],
      ['POST', '/api/v1/placements/a/add?worker=w4'],
      ['GET', '/api/v1/models?worker=w4'],
    ] as const) {
      const r = await call(method, path, 'op', method === 'POST' ? { to: 'w2' } : undefined);
      assert.equal(r.status, 503, `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, 'HLO_ERR_SHUTTING_DOWN');
      assert.match(r.body.error, /console/);
    }
    assert.equal((await call('GET', '/api/v1/placements', 'view')).status, 200);
  });
});
