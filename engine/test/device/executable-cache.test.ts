import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, truncate, writeFile, copyFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, suite, test } from 'node:test';
import { hostArray, PjrtError, Runtime, type Executable } from '@hloserve/native';
import { ExecutableCache, type ExecutableCacheOptions } from '../../src/device/executable-cache.js';
import { WRITE_DELAY_MS } from '../../src/device/run-record.js';

const scaled = (k: number) =>
  Buffer.from(`module {
  func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %c = stablehlo.constant dense<${k}.0> : tensor<4xf32>
    %0 = stablehlo.multiply %a, %c : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}`);

async function runScaled(exe: Executable): Promise<number[]> {
  const [out] = await exe.run([hostArray('f32', [4], new Float32Array([1, 2, 3, 4]))]);
  return Array.from(new Float32Array(out!.data.buffer, out!.data.byteOffset, 4));
}

suite('ExecutableCache on the CPU plugin', () => {
  let rt: Runtime;
  let dir: string;
  let warnings: string[];
  const open = (o: Partial<ExecutableCacheOptions> = {}) =>
    ExecutableCache.open({
      dir,
      maxBytes: 64 << 20,
      logger: { warn: (msg, f) => warnings.push(`${msg} ${String(f?.reason ?? f?.error ?? '')}`) },
      ...o,
    });
  const entryFiles = async () => (await readdir(dir)).filter((n) => n.endsWith('.hxc'));

  before(async () => {
    rt = await Runtime.create();
  });
  after(async () => {
    rt.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = await mkdtemp(join(tmpdir(), 'hloserve-xc-'));
    warnings = [];
  });

  test('a miss compiles and stores; a restarted cache loads it instead of compiling', async () => {
    const first = await open();
    const a = await first.compile(rt, scaled(3));
    assert.deepEqual(await runScaled(a), [3, 6, 9, 12]);
    assert.deepEqual([first.stats().misses, first.stats().hits, first.stats().entries], [1, 0, 1]);
    a.dispose();

    const second = await open();
    assert.equal(second.stats().entries, 1);
    assert.equal(second.stats().bytes, first.stats().bytes);
    const b = await second.compile(rt, scaled(3));
    assert.deepEqual(await runScaled(b), [3, 6, 9, 12]);
    assert.deepEqual(b.signature?.parameters, [{ dtype: 'f32', shape: [4] }]);
    assert.deepEqual([second.stats().misses, second.stats().hits], [0, 1]);
    b.dispose();
    // Another module is another key.
    (await second.compile(rt, scaled(5))).dispose();
    assert.deepEqual([second.stats().misses, second.stats().entries], [1, 2]);
    assert.deepEqual(warnings, []);
  });

  test('a recorded run is read back by a restarted cache for its entry and types only, and goes with the entry', async () => {
    const first = await open();
    const a = await first.compile(rt, scaled(3));
    assert.equal(first.ranWith(a, 'f32[4]'), undefined, 'nothing recorded yet');
    first.recordRuns([{ exe: a, types: 'f32[4]', seconds: 0.25 }]);
    assert.equal(first.ranWith(a, 'f32[4]'), 0.25);
    a.dispose();
    // Written within a second, or at once by a flush (a stop).
    await assert.rejects(readFile(join(dir, 'runs.json'), 'utf8'), /ENOENT/, 'not written at once');
    first.flushRuns();

    const second = await open();
    const b = await second.compile(rt, scaled(3));
    assert.equal(second.ranWith(b, 'f32[4]'), 0.25, 'the same entry with the same types');
    assert.equal(second.ranWith(b, 'f32[8]'), undefined, 'other argument types: no record');
    const c = await second.compile(rt, scaled(5));
    assert.equal(second.ranWith(c, 'f32[4]'), undefined, 'another module: another entry');
    b.dispose();
    c.dispose();

    // An entry found unusable is removed with its record: the recompiled one has not run.
    await flipLastByte(join(dir, (await entryFiles())[0]!));
    await flipLastByte(join(dir, (await entryFiles())[1]!));
    const third = await open();
    const d = await third.compile(rt, scaled(3));
    assert.equal(third.stats().rejected, 1);
    assert.equal(third.ranWith(d, 'f32[4]'), undefined);
    d.dispose();
    await new Promise((r) => setTimeout(r, WRITE_DELAY_MS + 200));
    assert.deepEqual(JSON.parse(await readFile(join(dir, 'runs.json'), 'utf8')), {}, 'written by the timer');
  });

  test('an unreadable run record is no record', async () => {
    (await (await open()).compile(rt, scaled(3))).dispose();
    await writeFile(join(dir, 'runs.json'), '{not json');
    const cache = await open();
    const exe = await cache.compile(rt, scaled(3));
    assert.equal(cache.stats().hits, 1);
    assert.equal(cache.ranWith(exe, 'f32[4]'), undefined);
    exe.dispose();
  });

  for (const [what, damage] of [
    ['a corrupt entry (one payload byte flipped)', flipLastByte],
    ['a truncated entry', halve],
    ['an entry cut inside its header', (p: string) => truncate(p, 20)],
    ['an entry that is not ours', (p: string) => writeFile(p, Buffer.alloc(4096, 7))],
  ] as const) {
    test(`${what} is recompiled with a warning, never loaded`, async () => {
      (await (await open()).compile(rt, scaled(2))).dispose();
      const [file] = await entryFiles();
      await damage(join(dir, file!));
      const cache = await open();
      const exe = await cache.compile(rt, scaled(2));
      assert.deepEqual(await runScaled(exe), [2, 4, 6, 8]);
      exe.dispose();
      assert.deepEqual([cache.stats().rejected, cache.stats().misses, cache.stats().hits], [1, 1, 0]);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /unusable/);
      // The recompiled entry replaced the bad one and is good.
      const again = await open();
      (await again.compile(rt, scaled(2))).dispose();
      assert.equal(again.stats().hits, 1);
    });
  }

  test('an intact entry the plugin refuses is recompiled with a warning', async () => {
    const cache = await open();
    const key = await cache.keyOf(rt, scaled(9));
    // A well-formed entry (magic, key, length, sha256) around bytes that are no executable.
    const payload = Buffer.from('not a serialized executable, but checksummed as one');
    const header = Buffer.alloc(80);
    header.write('HLOXEC\u0000\u0001', 0, 'latin1');
    Buffer.from(key, 'hex').copy(header, 8);
    header.writeBigUInt64LE(BigInt(payload.length), 40);
    createHash('sha256').update(payload).digest().copy(header, 48);
    await writeFile(join(dir, `${key}.hxc`), Buffer.concat([header, payload]));
    const exe = await (await open()).compile(rt, scaled(9));
    assert.deepEqual(await runScaled(exe), [9, 18, 27, 36]);
    exe.dispose();
    assert.match(warnings.join('\n'), /the plugin refused it/);
    const again = await open();
    (await again.compile(rt, scaled(9))).dispose();
    assert.equal(again.stats().hits, 1);
  });

  test('a stale plugin identity is a miss; an entry under another key is refused as stale', async () => {
    (await (await open()).compile(rt, scaled(4))).dispose();
    const upgraded = await open({
      identity: (r) => ({ ...r.compileIdentity, attributes: { ...r.compileIdentity.attributes, xla_version: -1 } }),
    });
    const oldKey = await (await open()).keyOf(rt, scaled(4));
    const newKey = await upgraded.keyOf(rt, scaled(4));
    assert.notEqual(oldKey, newKey);
    (await upgraded.compile(rt, scaled(4))).dispose();
    assert.deepEqual([upgraded.stats().misses, upgraded.stats().hits], [1, 0]);

    // A file renamed onto another key's name (a botched copy) must not load as that key.
    const otherKey = await upgraded.keyOf(rt, scaled(6));
    await copyFile(join(dir, `${oldKey}.hxc`), join(dir, `${otherKey}.hxc`));
    const exe = await upgraded.compile(rt, scaled(6));
    assert.deepEqual(await runScaled(exe), [6, 12, 18, 24]);
    exe.dispose();
    assert.equal(upgraded.stats().rejected, 1);
    assert.match(warnings.join('\n'), /stale/);
  });

  test('the byte bound evicts the least recently used entry', async () => {
    const probe = await open();
    (await probe.compile(rt, scaled(2))).dispose();
    const one = probe.stats().bytes;
    await rm(dir, { recursive: true, force: true });

    const cache = await open({ maxBytes: Math.floor(one * 2.5) });
    (await cache.compile(rt, scaled(2))).dispose();
    await new Promise((r) => setTimeout(r, 5));
    (await cache.compile(rt, scaled(3))).dispose();
    await new Promise((r) => setTimeout(r, 5));
    (await cache.compile(rt, scaled(2))).dispose(); // a hit: 2 is now more recent than 3
    assert.equal(cache.stats().hits, 1);
    (await cache.compile(rt, scaled(4))).dispose();
    const s = cache.stats();
    assert.equal(s.evictions, 1);
    assert.equal(s.entries, 2);
    assert.ok(s.bytes <= cache.maxBytes);
    const names = await entryFiles();
    assert.ok(names.includes(`${await cache.keyOf(rt, scaled(2))}.hxc`));
    assert.ok(names.includes(`${await cache.keyOf(rt, scaled(4))}.hxc`));
    assert.ok(!names.includes(`${await cache.keyOf(rt, scaled(3))}.hxc`));

    // The order survives a restart (file mtimes), and a smaller bound applies at open.
    const reopened = await open({ maxBytes: Math.floor(one * 1.5) });
    assert.equal(reopened.stats().entries, 1);
    assert.deepEqual(await entryFiles(), [`${await cache.keyOf(rt, scaled(4))}.hxc`]);
  });

  test('an executable larger than the bound is used but not stored', async () => {
    const cache = await open({ maxBytes: 100 });
    const exe = await cache.compile(rt, scaled(7));
    assert.deepEqual(await runScaled(exe), [7, 14, 21, 28]);
    exe.dispose();
    assert.deepEqual(await entryFiles(), []);
  });

  test('concurrent compiles of one key compile once and each caller gets its own executable', async () => {
    const cache = await open();
    const exes = await Promise.all([1, 2, 3].map(() => cache.compile(rt, scaled(8))));
    assert.deepEqual([cache.stats().misses, cache.stats().shared], [1, 2]);
    for (const e of exes) assert.deepEqual(await runScaled(e), [8, 16, 24, 32]);
    exes[0]!.dispose();
    assert.deepEqual(await runScaled(exes[1]!), [8, 16, 24, 32]);
    for (const e of exes) e.dispose();
  });

  test('queued: called once, when the load or compile is handed over, before the executable arrives', async () => {
    const cache = await open();
    const events: string[] = [];
    const track = (label: string, p: Promise<Executable>) =>
      p.then((e) => {
        events.push(`${label} settled`);
        return e;
      });
    // A miss (compiles), then the same key from a restarted cache (loads from disk), then two
    // concurrent callers of one new key (the second waits on the first's compile).
    const compiled = await track(
      'miss',
      cache.compile(rt, scaled(5), {}, () => events.push('miss queued')),
    );
    const restarted = await open();
    const loaded = await track(
      'hit',
      restarted.compile(rt, scaled(5), {}, () => events.push('hit queued')),
    );
    assert.equal(restarted.loadedFromDisk(loaded), true);
    const pair = await Promise.all([
      track(
        'first',
        cache.compile(rt, scaled(6), {}, () => events.push('first queued')),
      ),
      track(
        'second',
        cache.compile(rt, scaled(6), {}, () => events.push('second queued')),
      ),
    ]);
    assert.deepEqual(events.slice(0, 4), ['miss queued', 'miss settled', 'hit queued', 'hit settled']);
    for (const who of ['first', 'second']) {
      assert.equal(events.filter((e) => e === `${who} queued`).length, 1, who);
      assert.ok(events.indexOf(`${who} queued`) < events.indexOf(`${who} settled`), who);
    }
    for (const e of [compiled, loaded, ...pair]) e.dispose();
  });

  test('queued: called once even when the compile fails', async () => {
    const cache = await open();
    let calls = 0;
    await assert.rejects(
      cache.compile(rt, Buffer.from('module { this is not mlir }'), {}, () => calls++),
      PjrtError,
    );
    assert.equal(calls, 1);
  });

  test('EXPECTED FAILURE - a compile error reaches every concurrent caller and nothing is stored', async () => {
    const cache = await open();
    const bad = Buffer.from('module { this is not mlir }');
    const results = await Promise.allSettled([cache.compile(rt, bad), cache.compile(rt, bad)]);
    for (const r of results) assert.ok(r.status === 'rejected' && r.reason instanceof PjrtError);
    assert.deepEqual(await entryFiles(), []);
    assert.deepEqual(await readdir(dir), []);
  });
});

async function flipLastByte(path: string): Promise<void> {
  const b = await readFile(path);
  b[b.length - 1] = b[b.length - 1]! ^ 0xff;
  await writeFile(path, b);
}

async function halve(path: string): Promise<void> {
  await truncate(path, Math.floor((await stat(path)).size / 2));
}
