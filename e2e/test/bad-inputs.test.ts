import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { runPython, startServer, type ServerProcess } from '../src/server-process.js';

interface Case {
  proto: 'grpc' | 'http';
  case: string;
  expected: string | number;
  got: string | number;
  ok: boolean;
}

const MAX_RECV = 8 * 2 ** 20;
const MAX_JSON = 4 * 2 ** 20;

suite('malformed requests get the right status and never stop the server', () => {
  let server: ServerProcess;
  let cases: Case[];
  before(async () => {
    server = await startServer({
      HLOSERVE_MODELS_INCLUDE: 'mlp',
      HLOSERVE_ENDPOINTS_MAX_RECV_MSG_BYTES: String(MAX_RECV),
      HLOSERVE_ENDPOINTS_MAX_JSON_BYTES: String(MAX_JSON),
    });
    cases = (
      await runPython<{ cases: Case[] }>('bad_inputs.py', [
        server.grpcUrl(),
        server.httpUrl(),
        'mlp',
        String(MAX_RECV),
        String(MAX_JSON),
      ])
    ).cases;
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  test('at least 50 malformed requests over gRPC and HTTP', () => {
    assert.ok(cases.length >= 50, `${cases.length} cases`);
    assert.ok(cases.some((c) => c.proto === 'grpc') && cases.some((c) => c.proto === 'http'));
  });

  test('each gets its expected status and a valid request succeeds right after', () => {
    const wrong = cases.filter((c) => !c.ok).map((c) => `${c.proto} ${c.case}: expected ${c.expected}, got ${c.got}`);
    assert.deepEqual(wrong, []);
  });

  test('the server is still alive', () => {
    assert.equal(server.child.exitCode, null);
  });
});
