import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { openStore, type Store } from '../../src/state/index.js';
import { POSTGRES_INSTALL_HINT, startPostgres, type PostgresServer } from './postgres-server.js';

/** The one suite both dialects must pass. */
function storeSuite(name: string, open: () => Promise<Store>): void {
  suite(`operations store on ${name}`, () => {
    let store: Store;
    before(async () => {
      store = await open();
    });
    after(() => store?.close());

    test('health: reachable, a round trip, every shipped migration applied; closed: unreachable', async () => {
      const h = await store.health();
      assert.equal(h.reachable, true);
      assert.ok(h.latencyMs !== null && h.latencyMs >= 0);
      assert.ok(h.migrations !== null && h.migrations.known >= 1);
      assert.equal(h.migrations.applied, h.migrations.known);
      assert.match(h.migrations.latest ?? '', /^\d{4}_/);
      assert.doesNotMatch(h.location, /@|secret|password/, 'no credentials in the location');
      const other = await open();
      await other.close();
      const gone = await other.health();
      assert.equal(gone.reachable, false);
      assert.ok(gone.error !== null && gone.error.length > 0);
    });

    test('tokens: insert, find by hash, revoke once, touch', async () => {
      await store.insertToken({
        id: 'tk1',
        name: 'ops',
        scope: 'operator',
        hash: 'h1',
        createdAt: 1_700_000_000_000,
        createdBy: 'admin:tk0',
        expiresAt: null,
        revokedAt: null,
        lastUsedAt: null,
      });
      assert.equal((await store.tokenByHash('h1'))?.id, 'tk1');
      assert.equal(await store.tokenByHash('nope'), undefined);
      assert.equal(await store.revokeToken('tk1', 5), true);
      assert.equal(await store.revokeToken('tk1', 6), false, 'a second revoke changes nothing');
      assert.equal((await store.token('tk1'))?.revokedAt, 5);
      await store.touchToken('tk1', 1_800_000_000_000);
      assert.equal((await store.token('tk1'))?.lastUsedAt, 1_800_000_000_000, 'epoch ms survive as numbers');
      await assert.rejects(store.insertToken({ ...(await store.token('tk1'))!, id: 'tk2' }), 'the hash is unique');
      assert.deepEqual(
        (await store.listTokens()).map((t) => t.id),
        ['tk1'],
      );
    });

    test('audit: append-only, newest first, one record per (actor, idempotency key)', async () => {
      const base = { action: 'model.pin', target: 'm', result: 'ok', requestId: 'r', response: null };
      const s1 = await store.appendAudit({
        ...base,
        at: 1,
        actor: 'a',
        before: '{}',
        after: '{"r":1}',
        idempotencyKey: 'k1',
      });
      const s2 = await store.appendAudit({
        ...base,
        at: 2,
        actor: 'a',
        before: null,
        after: null,
        idempotencyKey: null,
      });
      const s3 = await store.appendAudit({
        ...base,
        at: 3,
        actor: 'a',
        before: null,
        after: null,
        idempotencyKey: null,
      });
      assert.ok(s1 < s2 && s2 < s3);
      await assert.rejects(
        store.appendAudit({ ...base, at: 4, actor: 'a', before: null, after: null, idempotencyKey: 'k1' }),
      );
      await store.appendAudit({ ...base, at: 4, actor: 'b', before: null, after: null, idempotencyKey: 'k1' });
      assert.equal((await store.auditByKey('a', 'k1'))?.seq, s1);
      const page = await store.listAudit({ limit: 2 });
      assert.equal(page.length, 2);
      assert.ok(page[0]!.seq > page[1]!.seq);
      const older = await store.listAudit({ limit: 10, beforeSeq: page[1]!.seq });
      assert.equal(older.length, 2);
      assert.equal(older[0]!.after, null);
      assert.equal(older[1]!.after, '{"r":1}');
    });

    test('events: increasing seq, read after a seq', async () => {
      const a = await store.appendEvent({ at: 1, kind: 'model.loaded', model: 'm', data: { v: 1 } });
      const b = await store.appendEvent({ at: 2, kind: 'model.unloaded', model: 'm', data: {} });
      assert.ok(b > a);
      const rows = await store.listEvents({ afterSeq: a, limit: 10 });
      assert.deepEqual(
        rows.map((r) => [r.kind, JSON.parse(r.data)]),
        [['model.unloaded', {}]],
      );
    });

    test('policies: upsert replaces, delete reports whether it existed', async () => {
      const row = {
        model: 'm',
        residency: 'device',
        weight: 2.5,
        maxBatchSize: null,
        maxQueueDelayUs: 100,
        updatedAt: 1,
        updatedBy: 'x',
      };
      await store.upsertPolicy(row);
      await store.upsertPolicy({ ...row, weight: 3.25, updatedAt: 2 });
      assert.deepEqual(await store.policy('m'), { ...row, weight: 3.25, updatedAt: 2 });
      assert.equal((await store.listPolicies()).length, 1);
      assert.equal(await store.deletePolicy('m'), true);
      assert.equal(await store.deletePolicy('m'), false);
    });

    test('placements: upsert per (fleet, model), list one fleet by model; audit filtered by action prefix', async () => {
      const row = { fleet: 'n1', pinned: null, updatedBy: 'token:a' };
      await store.upsertPlacement({ ...row, model: 'm2', replicas: 2, updatedAt: 1 });
      await store.upsertPlacement({ ...row, model: 'm1', replicas: null, pinned: '["w1"]', updatedAt: 2 });
      await store.upsertPlacement({ ...row, model: 'm2', replicas: 3, updatedAt: 3, updatedBy: 'token:b' });
      await store.upsertPlacement({ ...row, fleet: 'n2', model: 'm2', replicas: 5, updatedAt: 4 });
      assert.deepEqual(
        (await store.listPlacements('n2')).map((p) => [p.model, p.replicas]),
        [['m2', 5]],
      );
      assert.deepEqual(
        (await store.listPlacements('n1')).map((p) => [p.model, p.replicas, p.pinned, p.updatedBy]),
        [
          ['m1', null, '["w1"]', 'token:a'],
          ['m2', 3, null, 'token:b'],
        ],
      );
      const rec = { at: 5, actor: 'token:a', target: 'm2', before: null, after: null, result: 'ok', requestId: 'r' };
      await store.appendAudit({ ...rec, action: 'placement.add_replica' });
      await store.appendAudit({ ...rec, action: 'placement_x.other' });
      await store.appendAudit({ ...rec, action: 'model.pin' });
      const placed = await store.listAudit({ limit: 10, actionPrefix: 'placement.' });
      assert.deepEqual(
        placed.map((a) => a.action),
        ['placement.add_replica'],
        'the prefix is literal: no LIKE wildcard matches placement_x',
      );
    });

    test('settings: set, replace, compare-and-delete', async () => {
      await store.setSetting({ key: 'k', value: '"a"', updatedAt: 1, updatedBy: 'x' });
      await store.setSetting({ key: 'k', value: '"b"', updatedAt: 2, updatedBy: 'y' });
      assert.equal((await store.setting('k'))?.value, '"b"');
      assert.equal(await store.takeSetting('k', '"a"'), false);
      assert.equal(await store.takeSetting('k', '"b"'), true);
      assert.equal(await store.setting('k'), undefined);
    });

    test('uploads: insert, update offsets, list newest first', async () => {
      const row = {
        id: 'u1',
        createdAt: 10,
        createdBy: 'x',
        filename: 'b.tar',
        model: 'm',
        sizeBytes: 5_000_000_000,
        offsetBytes: 0,
        sha256: null,
        state: 'receiving',
        error: null,
        updatedAt: 10,
      };
      await store.insertUpload(row);
      await store.updateUpload('u1', { offsetBytes: 4_000_000_000, updatedAt: 11 });
      assert.equal((await store.upload('u1'))?.offsetBytes, 4_000_000_000, 'sizes past 2^32 survive');
      assert.equal((await store.listUploads(5)).length, 1);
    });

    test('metric history: append, read a window, prune', async () => {
      const s = (at: number, resolution: 's' | 'm') => ({
        model: 'm',
        resolution,
        at,
        requestsPerSecond: 1.5,
        p50Ms: null,
        p99Ms: 3,
        queueDepth: 0,
        residentBytes: 1024,
        loads: 1,
        evictions: 0,
      });
      await store.appendMetricSamples([s(1000, 's'), s(2000, 's'), s(3000, 's'), s(60_000, 'm')]);
      assert.deepEqual(
        (await store.listMetricSamples('m', 's', 2000)).map((r) => r.at),
        [2000, 3000],
      );
      await store.pruneMetricSamples('s', 3000);
      assert.deepEqual(
        (await store.listMetricSamples('m', 's', 0)).map((r) => r.at),
        [3000],
      );
      assert.equal((await store.listMetricSamples('m', 'm', 0)).length, 1);
    });

    test('events: a batch is numbered in its order across statements; the oldest pruned', async () => {
      const events = Array.from({ length: 4500 }, (_, i) => ({
        at: i,
        kind: 'bulk',
        model: `m${i}`,
        data: JSON.stringify({ i }),
      }));
      const seqs = await store.appendEvents(events);
      assert.equal(seqs.length, 4500);
      for (let i = 1; i < seqs.length; i++) assert.equal(seqs[i], seqs[i - 1]! + 1);
      const stored = await store.listEvents({ afterSeq: seqs[0]! - 1, limit: 5000 });
      assert.deepEqual(
        stored.map((r) => [r.seq, r.model]),
        events.map((e, i) => [seqs[i], e.model]),
      );
      await store.pruneEvents(seqs[4000]!);
      const left = await store.listEvents({ limit: 5000 });
      assert.equal(left[0]!.seq, seqs[4001]);
      assert.equal(left.length, 499);
    });

    test('metric history: more rows at once than one statement takes parameters for', async () => {
      // 5,000 rows, 50,000 parameters: past SQLite's 32,766 (a thousand models' five seconds).
      const rows = Array.from({ length: 5000 }, (_, i) => ({
        model: `bulk${i % 1000}`,
        resolution: 's' as const,
        at: 10_000 + Math.floor(i / 1000) * 1000,
        requestsPerSecond: i,
        p50Ms: null,
        p99Ms: null,
        queueDepth: 0,
        residentBytes: 0,
        loads: 0,
        evictions: 0,
      }));
      await store.appendMetricSamples(rows);
      assert.deepEqual(
        (await store.listMetricSamples('bulk999', 's', 0)).map((r) => r.requestsPerSecond),
        [999, 1999, 2999, 3999, 4999],
      );
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'hloserve-store-'));
after(() => rmSync(dir, { recursive: true, force: true }));

storeSuite('SQLite', () => openStore({ cacheDir: dir }));

suite('SQLite store file', () => {
  test('migrations apply once: reopening the same file keeps its rows', async () => {
    const path = join(dir, 'reopen.sqlite');
    const a = await openStore({ cacheDir: dir, sqlitePath: path });
    await a.setSetting({ key: 'k', value: '1', updatedAt: 1, updatedBy: 'x' });
    await a.close();
    const b = await openStore({ cacheDir: dir, url: `sqlite:${path}` });
    assert.equal((await b.setting('k'))?.value, '1');
    await b.close();
  });

  test('an unknown URL scheme is refused with the reason', async () => {
    await assert.rejects(openStore({ cacheDir: dir, url: 'mysql://u:secret@h/db' }), (e: Error) => {
      assert.match(e.message, /postgres:\/\/… or sqlite:<path>/);
      assert.doesNotMatch(e.message, /secret/);
      return true;
    });
  });
});

let server: PostgresServer | null = null;
const pgReady = startPostgres().then((s) => (server = s));
after(() => server?.stop());

suite('PostgreSQL', async () => {
  await pgReady;
  if (server === null) {
    console.warn(
      `\n*** SKIPPED: the PostgreSQL half of the store suite: no initdb/postgres found. Install: ${POSTGRES_INSTALL_HINT}\n`,
    );
    test('PostgreSQL store suite', { skip: `no PostgreSQL binaries (${POSTGRES_INSTALL_HINT})` }, () => {});
    return;
  }
  const url = server.url;
  storeSuite('PostgreSQL', () => openStore({ cacheDir: dir, url }));
  test('migrations are idempotent on PostgreSQL too', async () => {
    const s = await openStore({ cacheDir: dir, url });
    await s.close();
  });
});
