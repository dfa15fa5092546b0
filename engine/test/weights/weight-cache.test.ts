import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { ServeError } from '@hloserve/common/errors';
import { ManualClock } from '../../src/scheduler/manual-clock.js';
import type { WeightBackend } from '../../src/weights/weight-backend.js';
import { WeightCache, type WeightCacheEvent, type WeightLease } from '../../src/weights/weight-cache.js';
import { deferred, flush, type Deferred } from '../scheduler/fake-executor.js';

interface Host {
  readonly model: string;
}
interface Dev {
  readonly model: string;
  readonly id: number;
}

/** Records every backend call; uploads either complete at once (after `uploadMs`) or on demand. */
class FakeBackend implements WeightBackend<Host, Dev> {
  readonly log: string[] = [];
  manualUploads = false;
  readonly pendingUploads: { model: string; done: Deferred<Dev> }[] = [];
  failUpload: string | null = null;
  #ids = 0;
  constructor(
    readonly clock: ManualClock,
    readonly uploadMs = 0,
  ) {}
  readHost(model: string): Promise<Host> {
    this.log.push(`read:${model}`);
    return Promise.resolve({ model });
  }
  releaseHost(model: string): void {
    this.log.push(`drop:${model}`);
  }
  upload(model: string): Promise<Dev> {
    this.log.push(`upload:${model}`);
    if (this.failUpload === model) return Promise.reject(new ServeError('HLO_ERR_RUNTIME', 'upload failed'));
    if (this.manualUploads) {
      const done = deferred<Dev>();
      this.pendingUploads.push({ model, done });
      return done.promise;
    }
    this.clock.advance(this.uploadMs);
    return Promise.resolve({ model, id: ++this.#ids });
  }
  free(model: string): void {
    this.log.push(`free:${model}`);
  }
  of(kind: string): string[] {
    return this.log.filter((l) => l.startsWith(`${kind}:`)).map((l) => l.slice(kind.length + 1));
  }
}

function setup(budgetBytes: number, uploadMs = 0) {
  const clock = new ManualClock();
  const backend = new FakeBackend(clock, uploadMs);
  const events: WeightCacheEvent[] = [];
  const warnings: string[] = [];
  const cache = new WeightCache<Host, Dev>({
    backend,
    budgetBytes,
    clock,
    logger: { warn: (m) => void warnings.push(m) },
    onEvent: (e) => void events.push(e),
  });
  const use = async (name: string): Promise<void> => (await cache.acquire(name)).release();
  return { clock, backend, cache, events, warnings, use };
}

suite('WeightCache: LRU under a byte budget', () => {
  test('an access pattern gives the exact eviction sequence', async () => {
    const { backend, cache, use } = setup(300);
    for (const m of ['A', 'B', 'C', 'D']) await cache.addModel({ name: m, bytes: 100 });
    for (const m of ['A', 'B', 'C']) await use(m);
    assert.deepEqual(backend.of('free'), []);
    await use('A'); // hit; B is now least recently used
    assert.deepEqual(cache.lruOrder(), ['B', 'C', 'A']);
    await use('D');
    await use('B');
    await use('C');
    await use('D'); // hit
    await use('A');
    assert.deepEqual(backend.of('free'), ['B', 'C', 'A', 'B']);
    assert.deepEqual(backend.of('upload'), ['A', 'B', 'C', 'D', 'B', 'C', 'A']);
    assert.deepEqual(cache.lruOrder(), ['C', 'D', 'A']);
    const s = cache.stats();
    assert.equal(s.residentBytes, 300);
    assert.equal(s.loads, 7);
    assert.equal(s.evictions, 4);
    assert.equal(s.hits, 2);
    assert.equal(s.bytesLoaded, 700);
  });

  test('a cold model pays one load; load seconds and resident bytes are accounted', async () => {
    const { cache, events, use } = setup(1000, 25);
    await cache.addModel({ name: 'A', bytes: 400 });
    await use('A');
    await use('A');
    const s = cache.stats();
    assert.equal(s.loads, 1);
    assert.equal(s.loadSeconds, 0.025);
    assert.equal(s.residentBytes, 400);
    assert.deepEqual(
      events.filter((e) => e.type === 'load'),
      [{ type: 'load', model: 'A', bytes: 400, seconds: 0.025, pinned: false }],
    );
    assert.equal(cache.modelStats('A')!.deviceResident, true);
  });

  test('lastUsedAt is the clock at the latest lease, null before any, and survives eviction', async () => {
    const { clock, cache, use } = setup(100);
    await cache.addModel({ name: 'A', bytes: 100 });
    await cache.addModel({ name: 'B', bytes: 100 });
    assert.equal(cache.modelStats('A')!.lastUsedAt, null);
    clock.advance(1000);
    await use('A');
    const first = cache.modelStats('A')!.lastUsedAt!;
    assert.equal(first, clock.now());
    clock.advance(500);
    await use('B'); // evicts A: its last use is still known
    assert.equal(cache.modelStats('A')!.deviceResident, false);
    assert.equal(cache.modelStats('A')!.lastUsedAt, first);
    assert.equal(cache.modelStats('B')!.lastUsedAt, first + 500);
  });

  test('a model larger than the budget loads after evicting everything, with a warning', async () => {
    const { backend, cache, warnings, use } = setup(100);
    await cache.addModel({ name: 'small', bytes: 50 });
    await cache.addModel({ name: 'huge', bytes: 150 });
    await use('small');
    await use('huge');
    assert.deepEqual(backend.of('free'), ['small']);
    assert.equal(cache.stats().residentBytes, 150);
    assert.equal(cache.stats().oversizedLoads, 1);
    assert.ok(warnings.some((w) => /larger than the budget/.test(w)));
    await use('small');
    assert.deepEqual(backend.of('free'), ['small', 'huge']);
    assert.equal(cache.stats().residentBytes, 50);
  });

  test('shrinking the budget evicts idle models, least recently used first; evictIdle compacts', async () => {
    const { backend, cache, use } = setup(300);
    for (const m of ['A', 'B', 'C']) {
      await cache.addModel({ name: m, bytes: 100 });
      await use(m);
    }
    cache.setBudget(150);
    assert.deepEqual(backend.of('free'), ['A', 'B']);
    const lease = await cache.acquire('C');
    assert.equal(cache.evictIdle(), 0, 'a leased model is not compacted away');
    lease.release();
    assert.equal(cache.evictIdle(), 100);
    assert.equal(cache.stats().residentBytes, 0);
  });
});

suite('WeightCache: residency floors', () => {
  test('device: uploaded at registration, outside the budget, never evicted', async () => {
    const { backend, cache, use } = setup(100);
    await cache.addModel({ name: 'pin', bytes: 500, residency: 'device' });
    await cache.addModel({ name: 'A', bytes: 100 });
    await cache.addModel({ name: 'B', bytes: 100 });
    assert.deepEqual(backend.of('upload'), ['pin']);
    await use('A');
    await use('B');
    await use('pin');
    assert.deepEqual(backend.of('free'), ['A']);
    const s = cache.stats();
    assert.equal(s.pinnedBytes, 500);
    assert.equal(s.residentBytes, 100);
    assert.equal(cache.modelStats('pin')!.hostResident, false, 'no host copy kept for a device-pinned model');
    assert.deepEqual(backend.of('upload'), ['pin', 'A', 'B']);
  });

  test('system: host copy read once and kept; a reload after eviction is a pure upload', async () => {
    const { backend, cache, use } = setup(100);
    await cache.addModel({ name: 'A', bytes: 100, residency: 'system' });
    await cache.addModel({ name: 'B', bytes: 100, residency: 'system' });
    assert.deepEqual(backend.of('read'), ['A', 'B']);
    await use('A');
    await use('B');
    await use('A');
    assert.deepEqual(backend.of('read'), ['A', 'B']);
    assert.equal(cache.stats().hostReads, 2);
    assert.equal(cache.modelStats('A')!.hostResident, true);
  });

  test('unpinned: nothing held; each cold start re-reads the bundle and drops the host copy', async () => {
    const { backend, cache, use } = setup(100);
    await cache.addModel({ name: 'A', bytes: 100, residency: 'unpinned' });
    await cache.addModel({ name: 'B', bytes: 100, residency: 'unpinned' });
    assert.deepEqual(backend.of('read'), []);
    await use('A');
    await use('B');
    await use('A');
    assert.deepEqual(backend.of('read'), ['A', 'B', 'A']);
    assert.deepEqual(backend.of('drop'), ['A', 'B', 'A']);
    assert.equal(cache.modelStats('A')!.hostResident, false);
  });

  test('changing floors moves bytes between the budget and the pinned set', async () => {
    const { backend, cache, use } = setup(200);
    for (const m of ['A', 'B', 'C']) await cache.addModel({ name: m, bytes: 100 });
    await use('A');
    await use('B');
    await cache.setResidency('A', 'device');
    assert.deepEqual([cache.stats().residentBytes, cache.stats().pinnedBytes], [100, 100]);
    await use('C');
    assert.deepEqual(backend.of('free'), [], 'pinning A made room for C');
    await cache.setResidency('A', 'unpinned');
    // A rejoins the budget as most recently used; B, the least recent idle model, goes.
    assert.deepEqual(backend.of('free'), ['B']);
    assert.deepEqual([cache.stats().residentBytes, cache.stats().pinnedBytes], [200, 0]);
    assert.equal(cache.modelStats('A')!.residency, 'unpinned');
    await cache.setResidency('B', 'device');
    assert.equal(cache.isResident('B'), true, 'pinning a cold model uploads it');
    assert.equal(cache.stats().pinnedBytes, 100);
  });
});

suite('WeightCache: concurrency', () => {
  test('concurrent acquires of a cold model share one upload', async () => {
    const { backend, cache } = setup(1000);
    backend.manualUploads = true;
    await cache.addModel({ name: 'A', bytes: 100 });
    const leases: WeightLease<Dev>[] = [];
    const p = [cache.acquire('A'), cache.acquire('A'), cache.acquire('A')].map((x) => x.then((l) => leases.push(l)));
    await flush();
    assert.equal(backend.pendingUploads.length, 1);
    backend.pendingUploads[0]!.done.resolve({ model: 'A', id: 1 });
    await Promise.all(p);
    assert.equal(leases.length, 3);
    assert.ok(leases.every((l) => l.weights.id === 1));
    assert.equal(cache.modelStats('A')!.leases, 3);
    for (const l of leases) {
      l.release();
      l.release(); // idempotent
    }
    assert.equal(cache.modelStats('A')!.leases, 0);
    assert.equal(cache.stats().loads, 1);
  });

  test('a leased model is skipped by eviction even when least recently used', async () => {
    const { backend, cache, use } = setup(200);
    for (const m of ['A', 'B', 'C']) await cache.addModel({ name: m, bytes: 100 });
    const a = await cache.acquire('A');
    await use('B');
    await use('C');
    assert.deepEqual(backend.of('free'), ['B']);
    a.release();
  });

  test('when only leased models could make room, the load waits for their release', async () => {
    const { backend, cache } = setup(100);
    await cache.addModel({ name: 'A', bytes: 100 });
    await cache.addModel({ name: 'B', bytes: 100 });
    const a = await cache.acquire('A');
    let bLease: WeightLease<Dev> | null = null;
    const pending = cache.acquire('B').then((l) => (bLease = l));
    await flush();
    assert.equal(bLease, null);
    assert.deepEqual(backend.of('upload'), ['A'], 'B is not uploaded over a model in use');
    a.release();
    await pending;
    assert.deepEqual(backend.of('free'), ['A']);
    assert.deepEqual(backend.of('upload'), ['A', 'B']);
    bLease!.release();
  });

  test('an oversized model also waits for leases before evicting everything', async () => {
    const { backend, cache } = setup(100);
    await cache.addModel({ name: 'A', bytes: 60 });
    await cache.addModel({ name: 'huge', bytes: 500 });
    const a = await cache.acquire('A');
    let done = false;
    const p = cache.acquire('huge').then((l) => {
      done = true;
      l.release();
    });
    await flush();
    assert.equal(done, false);
    a.release();
    await p;
    assert.deepEqual(backend.of('free'), ['A']);
  });

  test('a failed upload releases its reservation and the next acquire retries', async () => {
    const { backend, cache, use } = setup(100);
    await cache.addModel({ name: 'A', bytes: 100 });
    backend.failUpload = 'A';
    await assert.rejects(cache.acquire('A'), (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_RUNTIME');
    assert.equal(cache.stats().residentBytes, 0);
    backend.failUpload = null;
    await use('A');
    assert.equal(cache.stats().loads, 1);
  });

  test('removing a leased model frees it at the last release; unknown models are NOT_FOUND', async () => {
    const { backend, cache } = setup(100);
    await cache.addModel({ name: 'A', bytes: 100 });
    const a = await cache.acquire('A');
    assert.equal(cache.removeModel('A'), true);
    assert.deepEqual(backend.of('free'), []);
    a.release();
    assert.deepEqual(backend.of('free'), ['A']);
    assert.equal(cache.stats().residentBytes, 0);
    await assert.rejects(
      cache.acquire('A'),
      (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_MODEL_NOT_FOUND',
    );
  });

  test('a model removed while its load waits for room is answered NOT_FOUND', async () => {
    const { cache } = setup(100);
    await cache.addModel({ name: 'A', bytes: 100 });
    await cache.addModel({ name: 'B', bytes: 100 });
    const a = await cache.acquire('A');
    const b = cache.acquire('B');
    await flush();
    cache.removeModel('B');
    await assert.rejects(b, (e: unknown) => e instanceof ServeError && e.code === 'HLO_ERR_MODEL_NOT_FOUND');
    a.release();
    assert.equal(cache.stats().residentBytes, 100);
  });
});
