import { after, before, suite, test } from 'node:test';
import { serveGateway, type RunningGateway } from '@hloserve/gateway';
import { startSurface, type Surface } from '../transports/surface.js';
import { gatewayHttpTarget } from './gateway-surfaces.js';
import {
  createFuzzShm,
  grpcTargets,
  httpTargets,
  jsonCodecTarget,
  manifestTarget,
  expectNoFindings,
  safetensorsTarget,
  type Target,
} from './surfaces.js';

// A short, seeded run for npm test: a few hundred inputs in seconds. bench/fuzz.mjs runs the same
// targets for as long as it is given.
const SEED = 19;

const check = <T>(target: Target<T>, count: number): Promise<void> => expectNoFindings(target, count, SEED);

suite('fuzz: the bundle parsers answer any input with a catalogue error or a result', () => {
  test('manifest', () => check(manifestTarget, 300));
  test('safetensors', () => check(safetensorsTarget, 300));
  test('HTTP infer body codec (JSON and binary)', () => check(jsonCodecTarget, 300));
});

suite('fuzz: the served surface answers in the catalogue and keeps serving', () => {
  let s: Surface;
  let gw: RunningGateway;
  let cleanup: () => void;
  before(async () => {
    cleanup = createFuzzShm();
    s = await startSurface({ maxJsonBytes: 8 << 20 });
    // The gateway in front of the same worker, for its HTTP proxy.
    await s.http.listen({ host: '127.0.0.1', port: 0 });
    const http = (s.http.server.address() as { port: number }).port;
    gw = await serveGateway(
      {
        workers: [
          { name: 'w0', address: { grpc: `127.0.0.1:${s.grpc.port}`, http: `127.0.0.1:${http}`, metrics: null } },
        ],
      },
      { host: '127.0.0.1', grpcPort: 0, httpPort: 0, metricsPort: -1 },
    );
  });
  after(async () => {
    await gw?.stop();
    await s.close();
    cleanup();
  });
  test('gRPC ModelInfer and shared-memory messages', async () => {
    for (const t of grpcTargets(s)) await check(t, 100);
  });
  test('HTTP JSON and binary bodies', async () => {
    for (const t of httpTargets(s)) await check(t, 100);
  });
  test("the gateway's HTTP proxy in front of the worker: any path, method, header and body", async () => {
    await check(gatewayHttpTarget(gw.ports.http), 200);
  });
});
