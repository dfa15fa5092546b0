import assert from 'node:assert/strict';
import { request as request_ } from 'node:http';
import { after, before, suite, test } from 'node:test';
import { credentials, status, type ClientUnaryCall, type ServiceError } from '@grpc/grpc-js';
import { GRPCInferenceClient, type ModelInferRequest, type ModelInferResponse } from '@hloserve/proto';
import { startServer, type ServerProcess } from '../src/server-process.js';

interface RawClient {
  modelInfer(req: ModelInferRequest, cb: (err: ServiceError | null, res?: ModelInferResponse) => void): ClientUnaryCall;
  close(): void;
}

const request = (rows: number): ModelInferRequest => ({
  modelName: 'mlp',
  modelVersion: '',
  id: '',
  parameters: new Map(),
  inputs: [{ name: 'x', datatype: 'FP32', shape: [rows, 784], parameters: new Map(), contents: undefined }],
  outputs: [],
  rawInputContents: [new Uint8Array(new Float32Array(rows * 784).fill(0.5).buffer)],
});

const line = (text: string, series: string): number => {
  const found = text.split('\n').find((l) => l.startsWith(`${series} `));
  return found === undefined ? 0 : Number(found.slice(series.length + 1));
};

// A 3 s batching window holds a lone 1-row request in the queue (mlp compiles sizes up to 32), so
// the client's cancel reaches the server while the request waits there.
suite(
  'a client that cancels (gRPC) or hangs up (HTTP): the queued request is dropped, never run, and the server serves on',
  () => {
    let server: ServerProcess;
    let client: RawClient;
    const metrics = async () => (await fetch(`http://127.0.0.1:${server.ports.metrics}/metrics`)).text();
    const CANCELED = 'nv_inference_request_failure{model="mlp",version="1",reason="CANCELED"}';
    // The server learns of a cancel from the stream's reset or the socket's close; give it a moment
    // to count it, then hand back the metrics it settled on.
    const metricsOnceCancelled = async (count: number): Promise<string> => {
      let m = '';
      for (let i = 0; i < 50; i++) {
        m = await metrics();
        if (line(m, CANCELED) === count) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      return m;
    };
    // The cancel must reach a request the server holds: on a loaded machine a fixed delay can cancel
    // a call whose headers the server has not read yet, which is never queued and so never counted.
    const queued = async (): Promise<boolean> => {
      for (let i = 0; i < 100; i++) {
        if (line(await metrics(), 'hloserve_queue_depth{model="mlp"}') === 1) return true;
        await new Promise((r) => setTimeout(r, 20));
      }
      return false;
    };

    before(async () => {
      server = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp', HLOSERVE_SCHEDULER_MAX_QUEUE_DELAY_US: '3000000' });
      client = new GRPCInferenceClient(server.grpcUrl(), credentials.createInsecure()) as unknown as RawClient;
    });
    after(async () => {
      client.close();
      assert.equal(await server.stop(), 0);
    });

    test('cancel while queued: CANCELLED at the client, counted CANCELED, no execution', async () => {
      const m0 = await metrics();
      const execs0 = line(m0, 'nv_inference_exec_count{model="mlp",version="1"}');
      const started = Date.now();
      let wasQueued = false;
      const err = await new Promise<ServiceError | null>((resolve) => {
        const call = client.modelInfer(request(1), (e) => resolve(e));
        void queued().then((q) => {
          wasQueued = q;
          call.cancel();
        });
      });
      assert.ok(wasQueued, 'the request reached the queue before the cancel');
      assert.equal(err?.code, status.CANCELLED);
      assert.ok(Date.now() - started < 2500, 'the cancel answered before the window closed');
      const m1 = await metricsOnceCancelled(1);
      assert.equal(line(m1, CANCELED), 1);
      assert.equal(line(m1, 'nv_inference_exec_count{model="mlp",version="1"}'), execs0, 'nothing was executed');
      assert.equal(line(m1, 'hloserve_queue_depth{model="mlp"}'), 0);
    });

    test('an HTTP client that hangs up while queued: counted CANCELED, no execution', async () => {
      const m0 = await metrics();
      const execs0 = line(m0, 'nv_inference_exec_count{model="mlp",version="1"}');
      const cancelled0 = line(m0, CANCELED);
      const body = JSON.stringify({
        inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 784], data: new Array(784).fill(0.5) }],
      });
      const req = request_(`http://127.0.0.1:${server.ports.http}/v2/models/mlp/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      });
      req.on('error', () => {}); // the hang-up below
      req.end(body);
      assert.ok(await queued(), 'the request reached the queue before the hang-up');
      req.destroy();
      const m1 = await metricsOnceCancelled(cancelled0 + 1);
      assert.equal(line(m1, CANCELED), cancelled0 + 1);
      assert.equal(line(m1, 'nv_inference_exec_count{model="mlp",version="1"}'), execs0, 'nothing was executed');
      assert.equal(line(m1, 'hloserve_queue_depth{model="mlp"}'), 0);
    });

    test('answered calls are not counted as cancelled, and a full batch is served at once', async () => {
      const m0 = await metrics();
      const cancelled0 = line(m0, CANCELED);
      const success0 = line(m0, 'nv_inference_request_success{model="mlp",version="1"}');
      for (let i = 0; i < 3; i++) {
        const res = await new Promise<ModelInferResponse>((resolve, reject) =>
          client.modelInfer(request(32), (e, r) => (e ? reject(e) : resolve(r!))),
        );
        assert.equal(res.rawOutputContents[0]!.byteLength, 32 * 10 * 4);
      }
      const m1 = await metrics();
      assert.equal(line(m1, 'nv_inference_request_success{model="mlp",version="1"}'), success0 + 3);
      assert.equal(line(m1, CANCELED), cancelled0);
    });
  },
);
