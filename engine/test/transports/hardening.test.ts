import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, suite, test } from 'node:test';
import { credentials, Metadata, status } from '@grpc/grpc-js';
import {
  ControlServiceClient,
  type ModelControlStatusResponse,
  type SetModelPolicyResponse,
} from '@hloserve/proto/control';
import {
  encodeModelInferRequest,
  int64Param,
  ModelInferRequest,
  ModelInferResponse,
  ModelMetadataRequest,
  ModelStreamInferResponse,
  SystemSharedMemoryRegisterRequest,
} from '@hloserve/proto';
import { startSurface, type Surface } from './surface.js';

const N = 784;
const row = () => Array.from({ length: N }, (_, i) => (i % 7) / 7);

function grpcRequest(extra: Partial<ModelInferRequest> = {}): Buffer {
  const x = Float32Array.from(row());
  return encodeModelInferRequest(
    ModelInferRequest.fromPartial({
      modelName: 'mlp',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, N] }],
      rawInputContents: [new Uint8Array(x.buffer)],
      ...extra,
    }),
  );
}

const jsonBody = (data: unknown, shape: unknown = [1, N], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape, data }], ...extra });

suite('the inference surface refuses hostile input at its root and keeps serving', () => {
  let s: Surface;
  const infer = (payload: string | Buffer, headers: Record<string, string> = {}) =>
    s.http.inject({
      method: 'POST',
      url: '/v2/models/mlp/infer',
      payload,
      headers: { 'content-type': 'application/json', ...headers },
    });
  const codeOf = (r: { body: string }) => (JSON.parse(r.body) as { code: string }).code;

  before(async () => {
    s = await startSurface({ maxJsonBytes: 8 << 20 });
  });
  after(() => s.close());

  test('HTTP JSON: flat and nested data give the same answer', async () => {
    const flat = await infer(jsonBody(row()));
    const nested = await infer(jsonBody([row()]));
    assert.equal(flat.statusCode, 200, flat.body);
    assert.equal(nested.statusCode, 200, nested.body);
    assert.deepEqual(JSON.parse(flat.body).outputs, JSON.parse(nested.body).outputs);
  });

  test('an HTTP answer is sent once: fastify has no second send to warn of', async () => {
    const log = s.http.log as unknown as { warn: (...a: unknown[]) => void };
    const warn = log.warn;
    const warned: unknown[] = [];
    log.warn = (...a) => void warned.push(a);
    try {
      for (const payload of [jsonBody(row()), 'not json']) await infer(payload);
      await s.http.inject({ method: 'GET', url: '/v2/models/mlp' });
    } finally {
      log.warn = warn;
    }
    // A fastify reply is thenable: a handler that returned it through an await sent the answer
    // a second time, and fastify built an error with its stack trace for each request.
    assert.deepEqual(warned, []);
  });

  test('HTTP JSON: ragged rows with the right total are refused', async () => {
    const half = row().slice(0, N / 2);
    const r = await infer(jsonBody([half, half, half, half], [4, N / 2 + N / 2]));
    assert.equal(r.statusCode, 400, r.body);
    const r2 = await infer(jsonBody([[...row().slice(0, N - 1)], [row()[0]]], [2, N / 2]));
    assert.equal(r2.statusCode, 400, r2.body);
    assert.equal(codeOf(r2), 'HLO_ERR_INVALID_ARGUMENT');
  });

  test('HTTP JSON: a number beyond double range is refused, not served as Infinity', async () => {
    const r = await infer(
      jsonBody(`[${row().slice(1).join(',')},1e400]`)
        .replace('"[', '[')
        .replace(']"', ']'),
    );
    assert.equal(r.statusCode, 400, r.body);
    assert.match(r.body, /beyond the range/);
    const f32 = await infer(jsonBody([1e39, ...row().slice(1)]));
    assert.equal(f32.statusCode, 400, f32.body);
  });

  test('HTTP JSON: data nested 100,000 deep answers 400, not a stack overflow', async () => {
    const deep = '['.repeat(100_000) + '1' + ']'.repeat(100_000);
    const r = await infer(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,${N}],"data":${deep}}]}`);
    assert.equal(r.statusCode, 400, r.body);
    const p = await infer(`{"parameters":${'['.repeat(100_000)}${']'.repeat(100_000)},"inputs":[]}`);
    assert.equal(p.statusCode, 400, p.body);
  });

  test('HTTP JSON: a shape the data cannot fill is refused before any allocation', async () => {
    const r = await infer(jsonBody([1, 2, 3], [2 ** 20, 2 ** 20]));
    assert.equal(r.statusCode, 400, r.body);
    assert.match(r.body, /cannot hold/);
  });

  test('HTTP JSON: a body past the JSON limit answers 413 with the catalogue code', async () => {
    const big = jsonBody(new Array(3_000_000).fill(0.5), [1, 3_000_000]);
    assert.ok(big.length > 8 << 20);
    const r = await infer(big);
    assert.equal(r.statusCode, 413);
    assert.equal(codeOf(r), 'HLO_ERR_MESSAGE_TOO_LARGE');
  });

  test('HTTP JSON: a 2 MiB body is parsed off the event loop and served', async () => {
    const rows = 32;
    // Spaces between values, as a pretty-printer writes them: past 1 MiB with 32 rows.
    const data = Array.from(
      { length: rows },
      () =>
        `[${row()
          .map((v) => (v + 0.123456789).toFixed(9))
          .join(',' + ' '.repeat(40))}]`,
    );
    const body = `{"inputs":[{"name":"x","datatype":"FP32","shape":[${rows},${N}],"data":[${data.join(',')}]}]}`;
    assert.ok(body.length > 1 << 20);
    const r = await infer(body);
    assert.equal(r.statusCode, 200, r.body.slice(0, 300));
    assert.deepEqual(JSON.parse(r.body).outputs[0].shape, [rows, 10]);
    const bad = await infer(body.replace('0.123456789', '1e999'));
    assert.equal(bad.statusCode, 400);
  });

  test('error messages quote at most a short prefix of a client value', async () => {
    const name = 'n'.repeat(2 ** 20);
    const r = await infer(JSON.stringify({ inputs: [{ name, datatype: 'FP32', shape: [1, N], data: row() }] }));
    assert.equal(r.statusCode, 400);
    assert.ok(r.body.length < 1000, `${r.body.length} bytes`);
    const g = await s.unary('ModelInfer', grpcRequest({ modelName: 'm'.repeat(2 ** 20) }));
    assert.equal(g.err?.code, status.NOT_FOUND);
    assert.ok(g.err!.details.length <= 4096);
    const shape = await s.unary(
      'ModelInfer',
      grpcRequest({
        inputs: [
          {
            name: 'x',
            datatype: 'FP32',
            shape: new Array(100_000).fill(1),
            parameters: new Map(),
            contents: undefined,
          },
        ],
      }),
    );
    assert.equal(shape.err?.code, status.INVALID_ARGUMENT);
    assert.ok(shape.err!.details.length < 1000, `${shape.err!.details.length}`);
  });

  test('a Triton timeout of 2^63-1 µs over gRPC and HTTP is no deadline, and the request is served', async () => {
    // The old failure: a timer armed past setTimeout's range fired every millisecond with a warning.
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    after(() => process.off('warning', onWarning));
    const g = await s.unary(
      'ModelInfer',
      grpcRequest({ parameters: new Map([['timeout', int64Param(2n ** 63n - 1n)]]) }),
    );
    assert.equal(g.err, null);
    assert.equal(ModelInferResponse.decode(g.res!).outputs[0]!.shape.join(','), '1,10');
    const h = await infer(jsonBody(row(), [1, N], { parameters: { timeout: 9.3e18 } }));
    assert.equal(h.statusCode, 200, h.body);
    const x = await infer(jsonBody(row()), { 'x-timeout-ms': String(2 ** 40) });
    assert.equal(x.statusCode, 200, x.body);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(
      warnings.filter((w) => w === 'TimeoutOverflowWarning'),
      [],
    );
  });

  test('a client deadline 30 days away is served, not DEADLINE_EXCEEDED (grpc-timeout overflow)', async () => {
    const g = await s.unary('ModelInfer', grpcRequest(), Date.now() + 30 * 86_400_000);
    assert.equal(g.err, null, g.err?.details);
    const soon = await s.unary('ModelInfer', grpcRequest(), Date.now() + 60_000);
    assert.equal(soon.err, null);
  });

  test('malformed protobuf answers INVALID_ARGUMENT on every method, then a valid request succeeds', async () => {
    const garbage = Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);
    for (const m of ['ModelInfer', 'ModelMetadata', 'ModelReady', 'SystemSharedMemoryRegister', 'ModelStatistics']) {
      const r = await s.unary(m, garbage);
      assert.equal(r.err?.code, status.INVALID_ARGUMENT, `${m}: ${r.err?.code} ${r.err?.details}`);
    }
    const ok = await s.unary(
      'ModelMetadata',
      Buffer.from(ModelMetadataRequest.encode({ name: 'mlp', version: '' }).finish()),
    );
    assert.equal(ok.err, null);
  });

  test('ControlService: malformed protobuf answers INVALID_ARGUMENT on every method, then valid calls succeed', async () => {
    const garbage = Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);
    for (const m of ['ModelControlStatus', 'SetModelResidency', 'SetModelPolicy', 'CompactMemory']) {
      const r = await s.call(`/hloserve.control.ControlService/${m}`, garbage);
      assert.equal(r.err?.code, status.INVALID_ARGUMENT, `${m}: ${r.err?.code} ${r.err?.details}`);
      assert.match(r.err.details, new RegExp(`not a valid ${m.charAt(0).toLowerCase()}${m.slice(1)} request`));
    }
    const client = new ControlServiceClient(`127.0.0.1:${s.grpc.port}`, credentials.createInsecure());
    try {
      const st = await new Promise<ModelControlStatusResponse>((res, rej) =>
        client.modelControlStatus({}, (err, r) => (err ? rej(err) : res(r))),
      );
      assert.deepEqual(
        st.models.map((m) => m.name),
        ['mlp'],
      );
      const p = await new Promise<SetModelPolicyResponse>((res, rej) =>
        client.setModelPolicy({ name: 'mlp', weight: 2 }, (err, r) => (err ? rej(err) : res(r))),
      );
      assert.equal(p.weight, 2);
    } finally {
      client.close();
    }
    assert.equal((await s.unary('ModelInfer', grpcRequest())).err, null);
  });

  test('64-bit values above 2^53 decode: an shm offset of 2^60 is judged by the registry, not refused as malformed', async () => {
    const reg = SystemSharedMemoryRegisterRequest.encode({
      name: 'r',
      key: '/nope',
      offset: String(2n ** 60n),
      byteSize: '16',
    }).finish();
    const r = await s.unary('SystemSharedMemoryRegister', Buffer.from(reg));
    assert.equal(r.err?.code, status.INVALID_ARGUMENT);
    assert.doesNotMatch(r.err!.details, /not a valid/);
    const p = await s.unary(
      'ModelInfer',
      grpcRequest({
        rawInputContents: [],
        inputs: [
          {
            name: 'x',
            datatype: 'FP32',
            shape: [1, N],
            contents: undefined,
            parameters: new Map([
              ['shared_memory_region', { parameterChoice: { $case: 'stringParam', value: 'r' } }],
              ['shared_memory_offset', int64Param(2n ** 62n)],
              ['shared_memory_byte_size', int64Param(N * 4)],
            ]),
          },
        ],
      }),
    );
    assert.equal(p.err?.code, status.INVALID_ARGUMENT);
    assert.doesNotMatch(p.err!.details, /not a valid ModelInferRequest/);
  });

  test('ModelStreamInfer: a garbage frame answers an error for that message; the stream and the requests around it live', async () => {
    const call = s.client.makeBidiStreamRequest(
      '/inference.GRPCInferenceService/ModelStreamInfer',
      (b: Buffer) => b,
      (b: Buffer) => ModelStreamInferResponse.decode(b),
      new Metadata(),
    );
    const got: ModelStreamInferResponse[] = [];
    const done = new Promise<void>((res, rej) => {
      call.on('data', (m: ModelStreamInferResponse) => got.push(m));
      call.on('end', () => res());
      call.on('error', rej);
    });
    call.write(grpcRequest({ id: 'a' }));
    call.write(Buffer.from([0xff, 0xff, 0xff]));
    call.write(grpcRequest({ id: 'b' }));
    call.end();
    await done;
    assert.equal(got.length, 3);
    assert.deepEqual(
      got
        .filter((m) => m.errorMessage === '')
        .map((m) => m.inferResponse!.id)
        .sort(),
      ['a', 'b'],
    );
    assert.match(got.find((m) => m.errorMessage !== '')!.errorMessage, /not a valid/);
  });

  test('a 150-character region name registers over HTTP (no bare 414); every Fastify error carries a catalogue code', async () => {
    const name = 'r'.repeat(150);
    const reg = await s.http.inject({
      method: 'POST',
      url: `/v2/systemsharedmemory/region/${name}/register`,
      payload: JSON.stringify({ key: '/hlo-no-such-key', offset: 0, byte_size: 16 }),
    });
    assert.equal(reg.statusCode, 400); // the key does not exist; the name was accepted
    assert.equal(codeOf(reg), 'HLO_ERR_SHM_INVALID');
    const long = await s.http.inject({ method: 'GET', url: `/v2/models/${'m'.repeat(5000)}` });
    assert.ok(long.statusCode >= 400 && long.statusCode < 500, `${long.statusCode}`);
    assert.match(codeOf(long), /^HLO_ERR_/);
    const route = await s.http.inject({ method: 'GET', url: '/v2/nothing-here' });
    assert.match(codeOf(route), /^HLO_ERR_/);
    const notJson = await s.http.inject({ method: 'POST', url: '/v2/repository/index', payload: '{' });
    assert.equal(notJson.statusCode, 400);
    assert.equal(codeOf(notJson), 'HLO_ERR_INVALID_ARGUMENT');
  });

  test('the server still serves after all of it', async () => {
    assert.equal((await infer(jsonBody(row()))).statusCode, 200);
    assert.equal((await s.unary('ModelInfer', grpcRequest())).err, null);
  });
});

suite('the HTTP server does not hold a stalled request forever', () => {
  let s: Surface;
  before(async () => {
    s = await startSurface({ requestTimeoutMs: 1000, headersTimeoutMs: 1000 });
    await s.http.listen({ host: '127.0.0.1', port: 0 });
  });
  after(() => s.close());

  test('a body that stops arriving is answered and closed within the request timeout', async () => {
    const port = (s.http.server.address() as { port: number }).port;
    const t0 = Date.now();
    const answer = await new Promise<string>((resolve, reject) => {
      const sock = connect(port, '127.0.0.1', () => {
        sock.write(
          'POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"inp',
        );
      });
      let text = '';
      sock.on('data', (d) => (text += d.toString()));
      sock.on('close', () => resolve(text));
      sock.on('error', reject);
      setTimeout(() => reject(new Error('still open after 10 s')), 10_000).unref();
    });
    const took = Date.now() - t0;
    assert.ok(took < 5000, `${took} ms`);
    if (answer) assert.match(answer, /HLO_ERR_DEADLINE_EXCEEDED/);
  });

  test('a header block past the Node limit answers 413 with the catalogue code', async () => {
    const port = (s.http.server.address() as { port: number }).port;
    const answer = await new Promise<string>((resolve, reject) => {
      const sock = connect(port, '127.0.0.1', () => {
        sock.write(`GET /v2 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`);
      });
      let text = '';
      sock.on('data', (d) => (text += d.toString()));
      sock.on('close', () => resolve(text));
      sock.on('error', reject);
    });
    assert.match(answer, /^HTTP\/1.1 413/);
    assert.match(answer, /HLO_ERR_MESSAGE_TOO_LARGE/);
  });
});
