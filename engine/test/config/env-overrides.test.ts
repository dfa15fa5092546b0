import { test, suite } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { ServeError } from '@hloserve/common/errors';
import { parseNodeConfig } from '../../src/config/node-config.js';
import { ENV_OVERRIDES } from '../../src/config/env-overrides.js';
import type { LoadedNodeConfig } from '../../src/config/types.js';

const FILE = '/etc/hloserve/node.yaml';
const DOC = { model_repo: 'models', global: { scheduler: { discipline: 'fifo' } } };

function load(env: Record<string, string>, doc: Record<string, unknown> = DOC): LoadedNodeConfig {
  return parseNodeConfig(stringify(doc), { file: FILE, env, cwd: '/work' });
}

function invalid(
  env: Record<string, string>,
  prefix: string,
  pattern: RegExp,
  doc: Record<string, unknown> = DOC,
): void {
  assert.throws(
    () => load(env, doc),
    (err: unknown) => {
      assert.ok(err instanceof ServeError && err.code === 'HLO_ERR_CONFIG_INVALID', String(err));
      assert.ok(
        err.message.startsWith(prefix),
        `expected prefix ${JSON.stringify(prefix)} in ${JSON.stringify(err.message)}`,
      );
      assert.match(err.message, pattern);
      return true;
    },
  );
}

suite('env overrides', () => {
  test('override the file and are reported for the startup log', () => {
    const { config, appliedOverrides } = load({
      HLOSERVE_SCHEDULER_DISCIPLINE: 'edf',
      HLOSERVE_RUNTIME_PLUGIN: 'cuda',
      HLOSERVE_ENDPOINTS_GRPC_PORT: '9001',
      HLOSERVE_RUNTIME_MEMORY_FRACTION: '0.5',
      PATH: '/usr/bin',
    });
    assert.equal(config.global.scheduler.discipline, 'edf');
    assert.equal(config.global.runtime.plugin, 'cuda');
    assert.equal(config.global.endpoints.grpcPort, 9001);
    assert.equal(config.global.runtime.memoryFraction, 0.5);
    assert.deepEqual(appliedOverrides, [
      { variable: 'HLOSERVE_RUNTIME_PLUGIN', path: 'global.runtime.plugin', value: 'cuda' },
      { variable: 'HLOSERVE_RUNTIME_MEMORY_FRACTION', path: 'global.runtime.memory_fraction', value: '0.5' },
      { variable: 'HLOSERVE_SCHEDULER_DISCIPLINE', path: 'global.scheduler.discipline', value: 'edf' },
      { variable: 'HLOSERVE_ENDPOINTS_GRPC_PORT', path: 'global.endpoints.grpc_port', value: '9001' },
    ]);
  });

  test('paths in variables resolve against the working directory', () => {
    const { config } = load({
      HLOSERVE_MODEL_REPO: 'repo',
      HLOSERVE_CACHE_DIR: '/var/cache/hloserve',
      HLOSERVE_RUNTIME_PLUGIN: 'lib/pjrt.so',
    });
    assert.equal(config.modelRepo, '/work/repo');
    assert.equal(config.global.cacheDir, '/var/cache/hloserve');
    assert.equal(config.global.runtime.plugin, '/work/lib/pjrt.so');
  });

  test('HLOSERVE_MODEL_REPO supplies a missing model_repo', () => {
    const { config } = load({ HLOSERVE_MODEL_REPO: '/srv/models' }, { global: {} });
    assert.equal(config.modelRepo, '/srv/models');
  });

  test('booleans: 1/true/yes/on and 0/false/no/off, any case', () => {
    for (const t of ['1', 'true', 'YES', 'On']) {
      assert.equal(load({ HLOSERVE_RUNTIME_PREALLOCATE: t }).config.global.runtime.preallocate, true, t);
    }
    for (const f of ['0', 'false', 'No', 'OFF']) {
      assert.equal(
        load({ HLOSERVE_ENDPOINTS_ALLOW_SHARED_MEMORY: f }).config.global.endpoints.allowSharedMemory,
        false,
        f,
      );
    }
  });

  test('lists, byte sizes and null', () => {
    const { config } = load({
      HLOSERVE_MODELS_INCLUDE: 'mlp, resnet:fno',
      HLOSERVE_RUNTIME_DEVICE_ARENA: 'false',
      HLOSERVE_RUNTIME_WEIGHT_CACHE_BYTES: '2GiB',
      HLOSERVE_ENDPOINTS_MAX_RECV_MSG_BYTES: '1048576',
      HLOSERVE_COMPILE_CACHE_MAX_BYTES: '512MiB',
    });
    assert.equal(config.global.compileCache.maxBytes, 512 * 2 ** 20);
    assert.equal(load({ HLOSERVE_COMPILE_CACHE_MAX_BYTES: '0' }).config.global.compileCache.maxBytes, 0);
    assert.deepEqual(config.global.modelsInclude, ['mlp', 'resnet', 'fno']);
    assert.equal(config.global.runtime.weightCacheBytes, 2 ** 31);
    assert.equal(config.global.runtime.deviceArena, false);
    assert.equal(config.global.endpoints.maxRecvMsgBytes, 1048576);
    const doc = { model_repo: 'm', global: { runtime: { weight_cache_bytes: 1000 } } };
    assert.equal(
      load({ HLOSERVE_RUNTIME_WEIGHT_CACHE_BYTES: 'null' }, doc).config.global.runtime.weightCacheBytes,
      null,
    );
  });

  test('empty variables are unset', () => {
    const { config, appliedOverrides } = load({ HLOSERVE_SCHEDULER_DISCIPLINE: '', HLOSERVE_SCHEDULER_TYPO: '' });
    assert.equal(config.global.scheduler.discipline, 'fifo');
    assert.deepEqual(appliedOverrides, []);
  });

  test('a worker that sets the key keeps its own value', () => {
    const doc = {
      ...DOC,
      workers: [
        { name: 'a' },
        {
          name: 'b',
          grpc_port: 9101,
          http_port: 9100,
          metrics_port: 9102,
          console_port: 9103,
          scheduler: { discipline: 'fair' },
        },
      ],
    };
    const { config } = load({ HLOSERVE_SCHEDULER_DISCIPLINE: 'edf' }, doc);
    assert.equal(config.workers[0]!.settings.scheduler.discipline, 'edf');
    assert.equal(config.workers[1]!.settings.scheduler.discipline, 'fair');
  });

  test('other HLOSERVE_ variables are left alone', () => {
    assert.deepEqual(load({ HLOSERVE_CUDA_PLUGIN: '/x.so', HLOSERVE_TEST: '1' }).appliedOverrides, []);
  });

  test('parse failures name the variable', () => {
    invalid(
      { HLOSERVE_ENDPOINTS_GRPC_PORT: 'abc' },
      'HLOSERVE_ENDPOINTS_GRPC_PORT: ',
      /expected an integer, got "abc"/,
    );
    invalid(
      { HLOSERVE_SCHEDULER_COST_EMA_ALPHA: 'half' },
      'HLOSERVE_SCHEDULER_COST_EMA_ALPHA: ',
      /expected a number, got "half"/,
    );
    invalid(
      { HLOSERVE_RUNTIME_PREALLOCATE: 'maybe' },
      'HLOSERVE_RUNTIME_PREALLOCATE: ',
      /expected 1\/true\/yes\/on or 0\/false\/no\/off, got "maybe"/,
    );
  });

  test('range and choice failures name the variable and the path', () => {
    invalid(
      { HLOSERVE_ENDPOINTS_GRPC_PORT: '70000' },
      'HLOSERVE_ENDPOINTS_GRPC_PORT (global.endpoints.grpc_port): ',
      /\[0, 65535\], got 70000/,
    );
    invalid(
      { HLOSERVE_SCHEDULER_DISCIPLINE: 'lifo' },
      'HLOSERVE_SCHEDULER_DISCIPLINE (global.scheduler.discipline): ',
      /got "lifo"/,
    );
    invalid({ HLOSERVE_RUNTIME_PLUGIN: 'cdua' }, 'HLOSERVE_RUNTIME_PLUGIN (global.runtime.plugin): ', /expected cpu/);
    invalid(
      { HLOSERVE_RUNTIME_WEIGHT_CACHE_BYTES: 'lots' },
      'HLOSERVE_RUNTIME_WEIGHT_CACHE_BYTES (global.runtime.weight_cache_bytes): ',
      /byte count/,
    );
    invalid(
      { HLOSERVE_ENDPOINTS_HTTP_PORT: '8001' },
      'HLOSERVE_ENDPOINTS_HTTP_PORT (global.endpoints.http_port): ',
      /port 8001 is also global\.endpoints\.grpc_port/,
    );
  });

  test('misspelt section variables are refused', () => {
    invalid(
      { HLOSERVE_SCHEDULER_DISCIPLIN: 'edf' },
      'HLOSERVE_SCHEDULER_DISCIPLIN: ',
      /not a known setting; known variables: HLOSERVE_MODEL_REPO/,
    );
    invalid({ HLOSERVE_ENDPOINTS_PORT: '1' }, 'HLOSERVE_ENDPOINTS_PORT: ', /not a known setting/);
    invalid({ HLOSERVE_COMPILE_CACHE_BYTES: '1' }, 'HLOSERVE_COMPILE_CACHE_BYTES: ', /not a known setting/);
  });

  test('a non-mapping section in the file is still the file’s error', () => {
    invalid({ HLOSERVE_RUNTIME_PLUGIN: 'cuda' }, `${FILE}: global.runtime: `, /expected a mapping/, {
      model_repo: 'm',
      global: { runtime: 'cuda' },
    });
  });

  test('the table follows HLOSERVE_<SECTION>_<FIELD>', () => {
    for (const s of ENV_OVERRIDES) {
      const tail = s.path[0] === 'global' ? s.path.slice(1) : s.path;
      assert.equal(s.variable, `HLOSERVE_${tail.join('_').toUpperCase()}`);
    }
    assert.equal(new Set(ENV_OVERRIDES.map((s) => s.variable)).size, ENV_OVERRIDES.length);
  });
});
