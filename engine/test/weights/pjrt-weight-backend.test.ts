import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { type DeviceBuffer, Runtime } from '@hloserve/native';
import { writeSafetensors } from '../../src/bundle/safetensors-writer.js';
import { arenaLimit, PjrtWeightBackend, type WeightSource } from '../../src/weights/pjrt-weight-backend.js';

/** Weights of `model`: tensors named a, b with the given shapes, filled with model-specific values. */
async function writeWeights(dir: string, model: string, shapes: number[][], seed: number): Promise<string> {
  const path = join(dir, `${model}.safetensors`);
  const tensors = shapes.map((shape, i) => {
    const n = shape.reduce((x, y) => x * y, 1);
    return { name: `t${i}`, dtype: 'f32' as const, shape, data: Float32Array.from({ length: n }, (_, k) => seed + k) };
  });
  await writeSafetensors(path, tensors, { argumentOrder: tensors.map((t) => t.name) });
  return path;
}

/**
 * The arena takes a range back in PJRT's on-delete callback, which the plugin runs once the
 * buffer's last use has finished: after dispose() on a quiet machine, a moment later on a busy one.
 */
async function arenaEmptied(arena: { stats(): { usedBytes: number } }): Promise<number> {
  const until = Date.now() + 10_000;
  while (arena.stats().usedBytes !== 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  return arena.stats().usedBytes;
}

async function contents(buffers: readonly DeviceBuffer[]): Promise<number[]> {
  const out: number[] = [];
  for (const b of buffers) {
    const h = await b.toHost();
    out.push(...new Float32Array(h.data.buffer, h.data.byteOffset, h.data.byteLength / 4));
  }
  return out;
}

const expected = (shapes: number[][], seed: number): number[] =>
  shapes.flatMap((s) => Array.from({ length: s.reduce((x, y) => x * y, 1) }, (_, k) => seed + k));

suite('PjrtWeightBackend with a device arena', () => {
  let rt: Runtime;
  let dir: string;
  const SAME = [[64, 32], [32]];
  const OTHER = [[128, 16]];
  before(async () => {
    rt = await Runtime.create();
    dir = mkdtempSync(join(tmpdir(), 'hlo-backend-'));
  });
  after(() => {
    rt.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  const backendWith = async (limitBytes: number, models: Record<string, [number[][], number]>) => {
    const arena = rt.createArena({ limitBytes });
    const be = new PjrtWeightBackend(rt, { arena });
    const sources: Record<string, WeightSource> = {};
    for (const [name, [shapes, seed]] of Object.entries(models)) {
      sources[name] = {
        path: await writeWeights(dir, name, shapes, seed),
        argumentOrder: shapes.map((_, i) => `t${i}`),
      };
    }
    const read = (m: string) => be.readHost(m, sources[m]!);
    return { arena, be, read };
  };

  test('host copies stay pageable; loads land in the arena; an evicted model’s views serve the next of its shape', async () => {
    const { arena, be, read } = await backendWith(1 << 20, { a: [SAME, 1], b: [SAME, 1000], c: [OTHER, 5] });
    assert.equal(be.staging, 'pageable');
    const hosts = Object.fromEntries(await Promise.all(['a', 'b', 'c'].map(async (m) => [m, await read(m)] as const)));
    const a = await be.upload('a', hosts.a!);
    assert.deepEqual(await contents(a), expected(SAME, 1));
    assert.ok(a.every((x) => x.memoryKind === 'device'));
    const used = arena.stats().usedBytes;
    assert.ok(used >= (64 * 32 + 32) * 4);
    be.free('a', a);
    assert.equal(arena.stats().usedBytes, used, 'the views are kept for reuse');
    const b = await be.upload('b', hosts.b!);
    assert.deepEqual(b, a, 'b reuses a’s views');
    assert.deepEqual(await contents(b), expected(SAME, 1000));
    assert.equal(arena.stats().usedBytes, used);
    const c = await be.upload('c', hosts.c!);
    assert.notEqual(c[0], a[0], 'another shape gets views of its own');
    assert.deepEqual(await contents(c), expected(OTHER, 5));
    for (const [m, d] of [
      ['b', b],
      ['c', c],
    ] as const)
      be.free(m, d);
    const ledger = rt.ledger().liveBuffers;
    be.dispose();
    assert.equal(rt.ledger().liveBuffers, ledger - 3, 'dispose frees the kept views');
    assert.equal(await arenaEmptied(arena), 0);
    arena.dispose();
  });

  test('views kept for another shape give way when the arena is full', async () => {
    // Room for one model of either shape, not for both.
    const { arena, be, read } = await backendWith(9000, { a: [SAME, 1], c: [OTHER, 7] });
    const a = await be.upload('a', await read('a'));
    be.free('a', a);
    const c = await be.upload('c', await read('c'));
    assert.equal(a[0]!.disposed, true, 'a’s views were dropped to make room');
    assert.deepEqual(await contents(c), expected(OTHER, 7));
    assert.equal(arena.stats().ranges, 1);
    be.free('c', c);
    be.dispose();
    arena.dispose();
  });

  test('a model the arena cannot hold loads through the plugin and is freed on eviction', async () => {
    const { arena, be, read } = await backendWith(1024, { a: [SAME, 3] });
    const before = rt.ledger();
    const a = await be.upload('a', await read('a'));
    assert.deepEqual(await contents(a), expected(SAME, 3));
    assert.equal(await arenaEmptied(arena), 0);
    assert.equal(rt.ledger().liveBuffers, before.liveBuffers + 2);
    be.free('a', a);
    assert.ok(
      a.every((b) => b.disposed),
      'buffers outside the arena are disposed, not kept',
    );
    // On the CPU plugin they are destroyed on an addon thread, a moment later.
    for (let i = 0; i < 200 && rt.ledger().liveBuffers !== before.liveBuffers; i++)
      await new Promise((r) => setTimeout(r, 1));
    assert.deepEqual(rt.ledger(), before);
    be.dispose();
    arena.dispose();
  });

  test('arenaLimit: the budget, room for a quarter of it or the largest model, and 1 MiB', () => {
    const mib = 1 << 20;
    assert.equal(arenaLimit(0), mib);
    assert.equal(arenaLimit(4 * mib), 6 * mib);
    assert.equal(arenaLimit(4 * mib, 3 * mib), 8 * mib);
    assert.equal(arenaLimit(4 * mib, 512), 6 * mib);
  });
});
