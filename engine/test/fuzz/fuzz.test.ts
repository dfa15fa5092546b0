import assert from 'node:assert/strict';
import { after, before, suite, test } from 'node:test';
import { startSurface, type Surface } from '../transports/surface.js';
import {
  createFuzzShm,
  grpcTargets,
  httpTargets,
  jsonCodecTarget,
  manifestTarget,
  runTarget,
  safetensorsTarget,
  type RunStats,
  type Target,
} from './surfaces.js';

// A short, seeded run for npm test: a few hundred inputs in seconds. bench/fuzz.mjs runs the same
// targets for as long as it is given.
const SEED = 19;

async function check(target: Target, count: number): Promise<void> {
  const stats: RunStats = { executions: 0, findings: [] };
  await runTarget(target, count, SEED, stats);
  assert.equal(stats.executions, count);
  assert.deepEqual(stats.findings, []);
}

suite('fuzz: the bundle parsers answer any input with a catalogue error or a result', () => {
  test('manifest', () => check(manifestTarget, 300));
  test('safetensors', () => check(safetensorsTarget, 300));
  test('HTTP infer body codec (JSON and binary)', () => check(jsonCodecTarget, 300));
});

suite('fuzz: the served surface answers in the catalogue and keeps serving', () => {
  let s: Surface;
  let cleanup: () => void;
  before(async () => {
    cleanup = createFuzzShm();
    s = await startSurface({ maxJsonBytes: 8 << 20 });
  });
  after(async () => {
    await s.close();
    cleanup();
  });
  test('gRPC ModelInfer and shared-memory messages', async () => {
    for (const t of grpcTargets(s)) await check(t, 100);
  });
  test('HTTP JSON and binary bodies', async () => {
    for (const t of httpTargets(s)) await check(t, 100);
  });
});
