import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import {
  GRPCInferenceClient,
  GRPCInferenceServiceClient,
  HealthCheckResponse_ServingStatus,
  HealthClient,
  ModelInferRequest,
  type ModelInferResponse,
  type ModelStreamInferResponse,
  paramValue,
  uint64Param,
} from '../src/index.js';
import { startEchoServer, type Observed } from '../testing/echo-server.js';

const observed: Observed = {};
let port = 0;
let stop: () => Promise<void>;
let client: GRPCInferenceServiceClient;

const clientOptions = {
  'grpc.max_receive_message_length': -1,
  'grpc.max_send_message_length': -1,
};

before(async () => {
  const s = await startEchoServer(observed);
  port = s.port;
  stop = () => new Promise((resolve) => s.server.tryShutdown(() => resolve()));
  client = new GRPCInferenceClient(`127.0.0.1:${port}`, credentials.createInsecure(), clientOptions);
});

after(async () => {
  client.close();
  await stop();
});

function infer(c: GRPCInferenceServiceClient, req: ModelInferRequest): Promise<ModelInferResponse> {
  return new Promise((resolve, reject) => c.modelInfer(req, (err, res) => (err ? reject(err) : resolve(res))));
}

function pattern(n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 131) & 0xff;
  return b;
}

test('ServerLive over a real grpc-js server', async () => {
  const res = await new Promise<{ live: boolean }>((resolve, reject) =>
    client.serverLive({}, (err, r) => (err ? reject(err) : resolve(r))),
  );
  assert.equal(res.live, true);
});

test('ModelInfer echo, small and 8 MiB, with the generated and the single-copy client', async () => {
  const generated = new GRPCInferenceServiceClient(`127.0.0.1:${port}`, credentials.createInsecure(), clientOptions);
  try {
    for (const c of [client, generated]) {
      for (const size of [12, 8 << 20]) {
        const raw = pattern(size);
        const req = ModelInferRequest.fromPartial({
          modelName: 'echo',
          id: `id-${size}`,
          parameters: new Map([['priority', uint64Param(1)]]),
          inputs: [{ name: 'INPUT0', datatype: 'UINT8', shape: [1, size] }],
          rawInputContents: [raw],
        });
        const res = await infer(c, req);
        assert.equal(res.id, `id-${size}`);
        assert.equal(res.modelVersion, '1');
        assert.equal(paramValue(res.parameters.get('echoed_inputs')), 'INPUT0');
        assert.deepEqual(res.outputs[0]!.shape, [1, size]);
        assert.equal(res.rawOutputContents.length, 1);
        assert.ok(Buffer.from(res.rawOutputContents[0]!).equals(Buffer.from(raw)), 'raw bytes echoed');

        // Server side: the decoded raw input is a view into grpc-js's message buffer.
        const seen = observed.lastRequest!.rawInputContents[0]!;
        assert.equal(seen.byteLength, size);
        assert.ok(seen.buffer.byteLength > seen.byteLength, 'view over the whole received message');
      }
    }
  } finally {
    generated.close();
  }
});

test('errors: handler status codes come through', async () => {
  const req = ModelInferRequest.fromPartial({ modelName: 'nope' });
  await assert.rejects(infer(client, req), (e: ServiceError) => {
    assert.equal(e.code, status.NOT_FOUND);
    assert.match(e.details, /unknown model: 'nope'/);
    return true;
  });
  await assert.rejects(
    new Promise((resolve, reject) =>
      client.modelConfig({ name: 'echo', version: '' }, (e, r) => (e ? reject(e) : resolve(r))),
    ),
    (e: ServiceError) => e.code === status.UNIMPLEMENTED,
  );
});

test('an int64 parameter beyond 2^53 is decoded, not refused (jstype = JS_STRING)', async () => {
  // ModelInferRequest{ model_name: "echo", parameters: { k: { int64_param: 2^60 } } } written by hand.
  const value = [0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10];
  const entry = [0x0a, 1, 0x6b, 0x12, value.length, ...value];
  const wire = Buffer.from([0x0a, 4, ...Buffer.from('echo'), 0x22, entry.length, ...entry]);
  const err = await new Promise<ServiceError | null>((resolve) =>
    client.makeUnaryRequest(
      '/inference.GRPCInferenceService/ModelInfer',
      (b: Buffer) => b,
      (b: Buffer) => b,
      wire,
      new Metadata(),
      (e) => resolve(e),
    ),
  );
  assert.notEqual(err?.code, status.INTERNAL);
});

test('ModelStreamInfer: responses in order, errors in-band, stream stays open', async () => {
  const call = client.modelStreamInfer();
  const got: ModelStreamInferResponse[] = [];
  const done = new Promise<void>((resolve, reject) => {
    call.on('data', (m: ModelStreamInferResponse) => got.push(m));
    call.on('end', () => resolve());
    call.on('error', reject);
  });
  const big = pattern(1 << 20);
  call.write(
    ModelInferRequest.fromPartial({ modelName: 'echo', id: 'a', inputs: [{ name: 'X' }], rawInputContents: [big] }),
  );
  call.write(ModelInferRequest.fromPartial({ modelName: 'missing', id: 'b' }));
  call.write(ModelInferRequest.fromPartial({ modelName: 'echo', id: 'c' }));
  call.end();
  await done;
  assert.equal(got.length, 3);
  assert.equal(got[0]!.errorMessage, '');
  assert.ok(Buffer.from(got[0]!.inferResponse!.rawOutputContents[0]!).equals(Buffer.from(big)));
  assert.match(got[1]!.errorMessage, /missing/);
  assert.equal(got[1]!.inferResponse, undefined);
  assert.equal(got[2]!.inferResponse?.id, 'c');
});

test('grpc.health.v1.Health/Check', async () => {
  const health = new HealthClient(`127.0.0.1:${port}`, credentials.createInsecure());
  try {
    const res = await new Promise<{ status: HealthCheckResponse_ServingStatus }>((resolve, reject) =>
      health.check({ service: '' }, (e, r) => (e ? reject(e) : resolve(r))),
    );
    assert.equal(res.status, HealthCheckResponse_ServingStatus.SERVING);
  } finally {
    health.close();
  }
});
