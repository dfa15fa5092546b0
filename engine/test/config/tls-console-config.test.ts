import { test, suite } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { ServeError } from '@hloserve/common/errors';
import { parseNodeConfig } from '../../src/config/node-config.js';
import type { WorkerSettings } from '../../src/config/types.js';

const FILE = '/etc/hloserve/node.yaml';

function settings(global: Record<string, unknown>, env: Record<string, string> = {}): WorkerSettings {
  return parseNodeConfig(stringify({ model_repo: 'models', global }), { file: FILE, env, cwd: '/work' }).config.global;
}

function invalid(global: Record<string, unknown>, pattern: RegExp, env: Record<string, string> = {}): void {
  assert.throws(
    () => settings(global, env),
    (err: unknown) => err instanceof ServeError && err.code === 'HLO_ERR_CONFIG_INVALID' && pattern.test(err.message),
  );
}

suite('node config: endpoints.tls', () => {
  test('absent: plaintext', () => assert.equal(settings({}).endpoints.tls, null));

  test('paths resolve against the node.yaml directory', () => {
    const tls = settings({ endpoints: { tls: { cert: 'tls/c.pem', key: '/k.pem', client_ca: 'ca.pem' } } }).endpoints
      .tls;
    assert.deepEqual(tls, {
      certFile: '/etc/hloserve/tls/c.pem',
      keyFile: '/k.pem',
      clientCaFile: '/etc/hloserve/ca.pem',
    });
  });

  test('a cert without its key, and unknown keys, name the path', () => {
    invalid({ endpoints: { tls: { cert: 'c.pem' } } }, /global\.endpoints\.tls\.key: required when tls is set/);
    invalid({ endpoints: { tls: { cert: 'c.pem', key: 'k.pem', certs: 'x' } } }, /global\.endpoints\.tls\.certs/);
    invalid(
      { endpoints: { tls: { cert: 3, key: 'k.pem' } } },
      /global\.endpoints\.tls\.cert: expected a non-empty string/,
    );
  });

  test('a workers[] entry may set its own', () => {
    const c = parseNodeConfig(
      stringify({
        model_repo: 'm',
        global: { endpoints: { tls: { cert: 'a.pem', key: 'a.key' } } },
        workers: [{ name: 'w0', endpoints: { tls: { cert: 'b.pem' } } }],
      }),
      { file: FILE, env: {}, cwd: '/work' },
    ).config;
    assert.equal(c.workers[0]!.settings.endpoints.tls?.certFile, '/etc/hloserve/b.pem');
    assert.equal(c.workers[0]!.settings.endpoints.tls?.keyFile, '/etc/hloserve/a.key');
  });
});

suite('node config: console', () => {
  const UPLOADS = { uploadMaxBytes: 8 * 2 ** 30, uploadMaxExpandedBytes: 16 * 2 ** 30 };

  test('defaults: SQLite under cache_dir, no extra origins, 8 GiB uploads of up to 16 GiB of files', () =>
    assert.deepEqual(settings({}).console, { stateUrl: null, allowedOrigins: [], ...UPLOADS }));

  test('upload limits from node.yaml, with units, and from the environment', () => {
    const c = settings({ console: { upload_max_bytes: '40GiB', upload_max_expanded_bytes: 100 * 2 ** 30 } }).console;
    assert.equal(c.uploadMaxBytes, 40 * 2 ** 30);
    assert.equal(c.uploadMaxExpandedBytes, 100 * 2 ** 30);
    const e = settings({}, { HLOSERVE_CONSOLE_UPLOAD_MAX_BYTES: '1GiB' }).console;
    assert.equal(e.uploadMaxBytes, 2 ** 30);
    invalid({ console: { upload_max_bytes: 0 } }, /global\.console\.upload_max_bytes: expected/);
  });

  test('state_url and allowed_origins from node.yaml', () => {
    const c = settings({
      console: { state_url: 'postgres://u:p@db/hlo', allowed_origins: ['https://ops.example:8443', 'http://x'] },
    }).console;
    assert.deepEqual(c, {
      stateUrl: 'postgres://u:p@db/hlo',
      allowedOrigins: ['https://ops.example:8443', 'http://x'],
      ...UPLOADS,
    });
  });

  test('bad values name the key', () => {
    invalid({ console: { state_url: 'mysql://x' } }, /global\.console\.state_url: expected postgres/);
    invalid(
      { console: { allowed_origins: ['ops.example'] } },
      /global\.console\.allowed_origins\[0\]: expected scheme/,
    );
  });

  test('the environment overrides node.yaml, by the table name or the older one', () => {
    const doc = { console: { state_url: 'sqlite:/a.db', allowed_origins: ['https://a.example'] } };
    const newer = settings(doc, {
      HLOSERVE_CONSOLE_STATE_URL: 'postgres://u@h/db',
      HLOSERVE_CONSOLE_ALLOWED_ORIGINS: 'https://b.example:8443, https://c.example',
    }).console;
    assert.deepEqual(newer, {
      stateUrl: 'postgres://u@h/db',
      allowedOrigins: ['https://b.example:8443', 'https://c.example'],
      ...UPLOADS,
    });
    const older = settings(doc, {
      HLOSERVE_STATE_URL: 'sqlite:/b.db',
      HLOSERVE_CONSOLE_ORIGINS: 'https://d.example:1',
    }).console;
    assert.deepEqual(older, { stateUrl: 'sqlite:/b.db', allowedOrigins: ['https://d.example:1'], ...UPLOADS });
    // Both set: the table's own name wins.
    const both = settings(doc, { HLOSERVE_CONSOLE_STATE_URL: 'sqlite:/new.db', HLOSERVE_STATE_URL: 'sqlite:/old.db' });
    assert.equal(both.console.stateUrl, 'sqlite:/new.db');
    assert.equal(settings(doc).console.stateUrl, 'sqlite:/a.db');
  });
});
