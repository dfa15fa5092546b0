/**
 * The gateway's proxy against stand-in workers that inject faults (a status of our choosing, a
 * refused connection, a slow answer): what reaches the client, what is retried, what deadline a
 * worker sees. The real workers are exercised in e2e/test/gateway-*.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import {
  credentials,
  Metadata,
  Server,
  ServerCredentials,
  type ClientDuplexStream,
  type ServerUnaryCall,
  type sendUnaryData,
  status as Status,
} from '@grpc/grpc-js';
import {
  GRPCInferenceService,
  GRPCInferenceServiceClient,
  ModelInferRequest,
  ModelInferResponse,
  ModelStreamInferResponse,
  RepositoryIndexResponse,
  ServerReadyResponse,
} from '@hloserve/proto';
import { serveGateway, type RunningGateway } from '@hloserve/gateway';

type Behaviour = (
  req: ModelInferRequest,
  call: ServerUnaryCall<Buffer, Buffer>,
) => { code: number; details: string } | null | 'hang';

interface FakeWorker {
  name: string;
  port: number;
  calls: number;
  lastTimeoutMs: number | null;
  lastAuth: string | null;
  lastRawBytes: number;
  shm: Set<string>;
  behave: Behaviour;
  server: Server;
}

async function fakeWorker(name: string, models: string[]): Promise<FakeWorker> {
  const w: FakeWorker = {
    name,
    port: 0,
    calls: 0,
    lastTimeoutMs: null,
    lastAuth: null,
    lastRawBytes: 0,
    shm: new Set(),
    behave: () => null,
    server: new Server({ 'grpc.max_receive_message_length': -1 }),
  };
  const raw = (b: Buffer) => b;
  const def = Object.fromEntries(
    Object.entries(GRPCInferenceService).map(([k, m]) => [
      k,
      { ...m, requestDeserialize: raw, responseSerialize: raw },
    ]),
  );
  const enc = (b: Uint8Array) => Buffer.from(b);
  w.server.addService(def as unknown as typeof GRPCInferenceService, {
    serverReady: (_c: unknown, cb: sendUnaryData<Buffer>) =>
      cb(null, enc(ServerReadyResponse.encode({ ready: true }).finish())),
    repositoryIndex: (_c: unknown, cb: sendUnaryData<Buffer>) =>
      cb(
        null,
        enc(
          RepositoryIndexResponse.encode({
            models: models.map((m) => ({ name: m, version: '1', state: 'READY', reason: '' })),
          }).finish(),
        ),
      ),
    modelStatistics: (_c: unknown, cb: sendUnaryData<Buffer>) => cb(null, Buffer.alloc(0)),
    systemSharedMemoryRegister: (c: ServerUnaryCall<Buffer, Buffer>, cb: sendUnaryData<Buffer>) => {
      const nameLen = c.request[1]!;
      const region = c.request.subarray(2, 2 + nameLen).toString();
      if (region.startsWith('bad') && name === 'w1')
        return cb({ code: Status.INVALID_ARGUMENT, details: 'no such key' });
      w.shm.add(region);
      cb(null, Buffer.alloc(0));
    },
    systemSharedMemoryUnregister: (c: ServerUnaryCall<Buffer, Buffer>, cb: sendUnaryData<Buffer>) => {
      w.shm.delete(c.request.subarray(2, 2 + c.request[1]!).toString());
      cb(null, Buffer.alloc(0));
    },
    modelInfer: (call: ServerUnaryCall<Buffer, Buffer>, cb: sendUnaryData<Buffer>) => {
      w.calls++;
      const t = call.metadata.get('grpc-timeout')[0];
      const dl = call.getDeadline();
      w.lastTimeoutMs =
        t !== undefined ? Number(String(t).slice(0, -1)) : Number.isFinite(+dl) ? +dl - Date.now() : null;
      w.lastAuth = (call.metadata.get('authorization')[0] as string | undefined) ?? null;
      const req = ModelInferRequest.decode(call.request);
      w.lastRawBytes = req.rawInputContents[0]?.length ?? 0;
      const fail = w.behave(req, call);
      if (fail === 'hang') return;
      if (fail) return cb(fail);
      cb(
        null,
        enc(
          ModelInferResponse.encode(
            ModelInferResponse.fromPartial({ modelName: req.modelName, id: `${name}:${req.id}` }),
          ).finish(),
        ),
      );
    },
  });
  w.port = await new Promise<number>((resolve, reject) =>
    w.server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  return w;
}

interface InferClient {
  modelInfer(
    req: ModelInferRequest,
    md: Metadata,
    opts: { deadline?: Date },
    cb: (err: { code: number; details: string } | null, res?: ModelInferResponse) => void,
  ): void;
  modelStreamInfer(md?: Metadata): ClientDuplexStream<ModelInferRequest, ModelStreamInferResponse>;
  close(): void;
}

suite('the gateway proxy against fault-injecting workers', () => {
  let w0: FakeWorker;
  let w1: FakeWorker;
  let gw: RunningGateway;
  let client: InferClient;
  const infer = (model: string, deadlineMs?: number, md = new Metadata(), raw?: Uint8Array) =>
    new Promise<{ ok: boolean; code?: number; details?: string; id?: string }>((resolve) =>
      client.modelInfer(
        ModelInferRequest.fromPartial({
          modelName: model,
          id: 'r',
          inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 3] }],
          rawInputContents: raw ? [raw] : [],
        }),
        md,
        deadlineMs ? { deadline: new Date(Date.now() + deadlineMs) } : {},
        (err, res) => resolve(err ? { ok: false, code: err.code, details: err.details } : { ok: true, id: res!.id }),
      ),
    );

  before(async () => {
    w0 = await fakeWorker('w0', ['both', 'only0']);
    w1 = await fakeWorker('w1', ['both']);
    gw = await serveGateway(
      {
        workers: [w0, w1].map((w) => ({
          name: w.name,
          address: { grpc: `127.0.0.1:${w.port}`, http: '127.0.0.1:1', metrics: null },
        })),
        mode: 'round_robin',
        maxInFlight: 4,
        maxMessageBytes: 32 * 2 ** 20,
        healthIntervalMs: 60_000,
      },
      { host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1 },
    );
    client = new GRPCInferenceServiceClient(`127.0.0.1:${gw.ports.grpc}`, credentials.createInsecure(), {
      'grpc.max_send_message_length': -1,
    }) as unknown as InferClient;
  });
  after(async () => {
    client.close();
    await gw.stop();
    w0.server.forceShutdown();
    w1.server.forceShutdown();
  });

  test('bodies reach the worker and answers come back unchanged; round robin alternates', async () => {
    const ids = [await infer('both'), await infer('both')].map((r) => r.id);
    assert.deepEqual(ids.sort(), ['w0:r', 'w1:r']);
    assert.equal((await infer('only0')).id, 'w0:r');
  });

  test('an unknown model is NOT_FOUND from the gateway', async () => {
    const r = await infer('nope');
    assert.equal(r.code, Status.NOT_FOUND);
  });

  for (const [name, code] of [
    ['INVALID_ARGUMENT', Status.INVALID_ARGUMENT],
    ['INTERNAL', Status.INTERNAL],
    ['RESOURCE_EXHAUSTED', Status.RESOURCE_EXHAUSTED],
    ['FAILED_PRECONDITION', Status.FAILED_PRECONDITION],
  ] as const) {
    test(`a worker's ${name} reaches the client as it is and is not tried on the other replica`, async () => {
      w0.behave = w1.behave = () => ({ code, details: `worker says ${name}` });
      const before = w0.calls + w1.calls;
      const r = await infer('both');
      w0.behave = w1.behave = () => null;
      assert.equal(r.code, code);
      assert.equal(r.details, `worker says ${name}`);
      assert.equal(w0.calls + w1.calls - before, 1);
    });
  }

  test("a worker's 'not ready' refusal has not run: the other replica answers", async () => {
    w0.behave = () => ({ code: Status.UNAVAILABLE, details: "model 'both' is not ready" });
    const results = [await infer('both'), await infer('both')];
    w0.behave = () => null;
    assert.deepEqual(
      results.map((r) => r.id),
      ['w1:r', 'w1:r'],
    );
  });

  test('the deadline reaches the worker to the millisecond (not rounded up to a second)', async () => {
    await infer('only0', 1500);
    assert.ok(w0.lastTimeoutMs !== null && w0.lastTimeoutMs > 1300 && w0.lastTimeoutMs <= 1500, `${w0.lastTimeoutMs}`);
    await infer('only0', 250);
    assert.ok(w0.lastTimeoutMs !== null && w0.lastTimeoutMs > 100 && w0.lastTimeoutMs <= 250, `${w0.lastTimeoutMs}`);
  });

  test('the inbound cap answers RESOURCE_EXHAUSTED beyond it and the rest complete', async () => {
    w0.behave = w1.behave = () => {
      const until = Date.now() + 30;
      while (Date.now() < until);
      return null;
    };
    const rs = await Promise.all(Array.from({ length: 12 }, () => infer('both')));
    w0.behave = w1.behave = () => null;
    const shed = rs.filter((r) => r.code === Status.RESOURCE_EXHAUSTED).length;
    assert.ok(shed > 0, 'some were shed');
    assert.equal(rs.filter((r) => r.ok).length + shed, 12);
  });

  test('shared-memory registration fans out; one refusal rolls back the others', async () => {
    const reg = (name: string) => {
      const b = Buffer.from(name);
      const body = Buffer.concat([Buffer.from([0x0a, b.length]), b, Buffer.from([0x12, 1, 0x6b])]);
      return gw.gateway.registerSharedMemory(name, body, null);
    };
    assert.equal((await reg('good')).ok, true);
    assert.ok(w0.shm.has('good') && w1.shm.has('good'));
    const bad = await reg('bad-region');
    assert.equal(bad.ok, false);
    assert.equal(bad.code, Status.INVALID_ARGUMENT);
    assert.ok(!w0.shm.has('bad-region'), 'rolled back on the worker that accepted');
  });

  test('a 24 MiB request crosses both HTTP/2 hops intact; one over the cap is RESOURCE_EXHAUSTED at the gateway', async () => {
    const big = new Uint8Array(24 * 2 ** 20).fill(7);
    const r = await infer('only0', undefined, undefined, big);
    assert.equal(r.id, 'w0:r', r.details);
    assert.equal(w0.lastRawBytes, big.length);
    const before = w0.calls;
    const over = await infer('only0', undefined, undefined, new Uint8Array(33 * 2 ** 20));
    assert.equal(over.code, Status.RESOURCE_EXHAUSTED, over.details);
    assert.equal(w0.calls, before, 'never forwarded');
  });

  test('ModelStreamInfer: each message is routed on its own; a refused one answers error_message and the stream goes on', async () => {
    w1.behave = (req) => (req.id === 'bad' ? { code: Status.INVALID_ARGUMENT, details: 'worker says no' } : null);
    const md = new Metadata();
    md.set('authorization', 'Bearer streamed');
    const stream = client.modelStreamInfer(md);
    const answers: ModelStreamInferResponse[] = [];
    stream.on('data', (m: ModelStreamInferResponse) => answers.push(m));
    const ended = new Promise<void>((resolve, reject) => {
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    const msg = (model: string, id: string) =>
      ModelInferRequest.fromPartial({ modelName: model, id, inputs: [{ name: 'x', datatype: 'FP32', shape: [1] }] });
    for (const [m, id] of [
      ['both', 'a'],
      ['both', 'b'],
      ['only0', 'c'],
      ['nope', 'd'],
    ] as const)
      stream.write(msg(m, id));
    stream.end();
    await ended;
    const ids = answers.filter((a) => a.inferResponse).map((a) => a.inferResponse!.id);
    assert.equal(ids.length, 3);
    assert.ok(ids.includes('w0:c'), ids.join());
    assert.ok(ids.some((i) => i.startsWith('w0:')) && ids.some((i) => i.startsWith('w1:')), `spread: ${ids.join()}`);
    const errors = answers.filter((a) => a.errorMessage !== '').map((a) => a.errorMessage);
    assert.equal(errors.length, 1);
    assert.match(errors[0]!, /nope/);
    assert.equal(w0.lastAuth, 'Bearer streamed');

    // A worker's refusal is that message's error; the messages after it are still answered.
    const s2 = client.modelStreamInfer();
    const got: ModelStreamInferResponse[] = [];
    s2.on('data', (m: ModelStreamInferResponse) => got.push(m));
    const done2 = new Promise<void>((resolve, reject) => {
      s2.on('end', resolve);
      s2.on('error', reject);
    });
    for (const id of ['bad', 'bad', 'ok1', 'ok2']) s2.write(msg('both', id));
    s2.end();
    await done2;
    w1.behave = () => null;
    assert.equal(got.length, 4);
    const errs = got.filter((a) => a.errorMessage !== '');
    assert.equal(errs.length, 1, 'one of the two bad ones reached w1');
    assert.equal(errs[0]!.errorMessage, 'worker says no');
    assert.equal(
      got.filter((a) => a.inferResponse?.id.endsWith('ok1') || a.inferResponse?.id.endsWith('ok2')).length,
      2,
    );
  });

  test('ModelStreamInfer: cancelling the stream cancels the forwards still in flight', async () => {
    w0.behave = () => 'hang';
    const stream = client.modelStreamInfer();
    const closed = new Promise<number>((resolve) => stream.on('error', (e: { code: number }) => resolve(e.code)));
    stream.write(
      ModelInferRequest.fromPartial({
        modelName: 'only0',
        id: 'h',
        inputs: [{ name: 'x', datatype: 'FP32', shape: [1] }],
      }),
    );
    const t0 = Date.now();
    const inFlight = (): number => gw.gateway.metrics.inFlight;
    while (inFlight() === 0 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 5));
    assert.equal(inFlight(), 1, 'the message is in flight at the worker');
    stream.cancel();
    assert.equal(await closed, Status.CANCELLED);
    while (inFlight() !== 0 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 5));
    w0.behave = () => null;
    assert.equal(inFlight(), 0, 'the forward was cancelled, not left to hang');
  });

  test("the client's metadata (a bearer token) reaches the worker", async () => {
    const md = new Metadata();
    md.set('authorization', 'Bearer abc.def');
    await infer('only0', undefined, md);
    assert.equal(w0.lastAuth, 'Bearer abc.def');
  });

  test('a call cut off mid-way by a dying worker answers UNAVAILABLE and is never re-sent to the replica', async () => {
    const [w2, w3] = [await fakeWorker('w2', ['pair']), await fakeWorker('w3', ['pair'])];
    try {
      for (const w of [w2, w3]) {
        gw.gateway.setWorker({
          name: w.name,
          address: { grpc: `127.0.0.1:${w.port}`, http: '127.0.0.1:1', metrics: null },
        });
        // The worker takes the call, then dies holding it.
        w.behave = () => {
          setImmediate(() => w.server.forceShutdown());
          return 'hang';
        };
      }
      await gw.gateway.fleet.refresh(true);
      assert.equal(gw.gateway.fleet.holders('pair').length, 2);
      const dropped = gw.gateway.metrics.dropped;
      const r = await infer('pair');
      assert.equal(r.code, Status.UNAVAILABLE, r.details);
      assert.match(r.details!, /may have run; not re-sent/);
      assert.equal(w2.calls + w3.calls, 1, 'the call reached one worker only');
      assert.equal(gw.gateway.metrics.dropped, dropped + 1);
      assert.equal(gw.gateway.fleet.holders('pair').length, 1, 'the dead worker left the routing table');
    } finally {
      w2.server.forceShutdown();
      w3.server.forceShutdown();
    }
  });

  test('a worker that refuses connections: requests fail over to the replica that holds the model', async () => {
    w1.server.forceShutdown();
    const rs = await Promise.all(Array.from({ length: 4 }, () => infer('both')));
    assert.deepEqual(
      rs.map((r) => r.id),
      ['w0:r', 'w0:r', 'w0:r', 'w0:r'],
    );
  });
});
