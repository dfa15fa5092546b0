import { test, suite } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ServeError } from '@hloserve/common/errors';
import {
  buildNodeConfig,
  defaultConfig,
  deepMerge,
  flagConfig,
  loadNodeConfig,
  parseNodeConfig,
  workerSettings,
  IMPLICIT_WORKER_NAME,
} from '../../src/config/node-config.js';
import { defaultCacheDir } from '../../src/config/defaults.js';
import { parseByteSize } from '../../src/config/config-reader.js';
import type { LoadedNodeConfig } from '../../src/config/types.js';

const FILE = '/etc/hloserve/node.yaml';

function parse(doc: Record<string, unknown>, env: Record<string, string> = {}): LoadedNodeConfig {
  return parseNodeConfig(stringify(doc), { file: FILE, env, cwd: '/work' });
}

/** `global` settings merged into a minimal valid document. */
const withGlobal = (global: Record<string, unknown>): Record<string, unknown> => ({ model_repo: 'models', global });

function invalid(
  doc: Record<string, unknown> | string,
  where: string,
  pattern: RegExp,
  env: Record<string, string> = {},
): void {
  assert.throws(
    () => (typeof doc === 'string' ? parseNodeConfig(doc, { file: FILE, env, cwd: '/work' }) : parse(doc, env)),
    (err: unknown) => {
      assert.ok(err instanceof ServeError, String(err));
      assert.equal(err.code, 'HLO_ERR_CONFIG_INVALID');
      assert.ok(
        err.message.startsWith(`${where}: `),
        `expected prefix ${JSON.stringify(where)} in ${JSON.stringify(err.message)}`,
      );
      assert.match(err.message, pattern);
      return true;
    },
  );
}

const at = (path: string): string => `${FILE}: ${path}`;

suite('node config: defaults', () => {
  test('defaultConfig has every documented default', () => {
    const c = defaultConfig('/srv/models');
    assert.equal(c.file, null);
    assert.equal(c.modelRepo, '/srv/models');
    assert.deepEqual(
      c.workers.map((w) => [w.name, w.implicit]),
      [[IMPLICIT_WORKER_NAME, true]],
    );
    assert.equal(c.workers[0]!.settings, c.global);
    assert.deepEqual(c.global, {
      cacheDir: defaultCacheDir(),
      modelControlMode: 'static',
      modelPollSeconds: 15,
      modelsInclude: [],
      modelUnloadGraceSeconds: 5,
      modelSettleSeconds: 0.25,
      runtime: {
        plugin: 'cpu',
        deviceOrdinal: 0,
        cpuDeviceCount: 1,
        cpuAsynchronous: false,
        memoryFraction: 0.9,
        preallocate: false,
        allocator: 'bfc',
        weightCacheFraction: 1.0,
        weightCacheWiggleFraction: 0.1,
        weightCacheBytes: null,
        deviceArena: true,
      },
      compileCache: { maxBytes: 2 * 1024 ** 3 },
      scheduler: {
        discipline: 'fair',
        emaHalflifeSeconds: 30,
        recencyPenaltyCap: 0.25,
        coalescingDiscount: 0.1,
        costEmaAlpha: 0.2,
        maxQueueDepth: 1024,
        dispatchTimeoutSeconds: 30,
        maxQueueDelayUs: 0,
        coldHoldUs: 2000,
        models: {},
      },
      endpoints: {
        host: '127.0.0.1',
        grpcPort: 8001,
        httpPort: 8000,
        metricsPort: 8002,
        consolePort: 8003,
        maxConcurrentRequests: 64,
        maxRecvMsgBytes: 268435456,
        maxSendMsgBytes: 268435456,
        maxJsonBytes: 67108864,
        httpRequestTimeoutSeconds: 300,
        httpHeadersTimeoutSeconds: 60,
        allowSharedMemory: true,
        tls: null,
      },
      console: {
        stateUrl: null,
        allowedOrigins: [],
        uploadMaxBytes: 8 * 2 ** 30,
        uploadMaxExpandedBytes: 16 * 2 ** 30,
      },
      hooks: { enabled: true, threads: 2, timeoutMs: 5000, maxHeapMb: 256, maxBufferMb: 2048, maxQueued: 256 },
      logging: { level: 'info' },
    });
    assert.equal(workerSettings(c), c.global);
  });

  test('relative model_repo resolves against cwd without a file', () => {
    assert.equal(defaultConfig('models').modelRepo, join(process.cwd(), 'models'));
  });
});

suite('node config: a full file', () => {
  test('every key read, paths relative to the file', () => {
    const { config, appliedOverrides } = parse({
      model_repo: '../models',
      global: {
        cache_dir: 'cache',
        model_control_mode: 'dynamic',
        model_poll_seconds: 2.5,
        models_include: ['mlp', 'resnet'],
        model_unload_grace_seconds: 0,
        model_settle_seconds: 1.5,
        runtime: {
          plugin: 'plugins/libtpu.so',
          device_ordinal: 1,
          cpu_device_count: 4,
          cpu_asynchronous: true,
          memory_fraction: 0.5,
          preallocate: true,
          allocator: 'cuda_async',
          weight_cache_fraction: 0.75,
          weight_cache_wiggle_fraction: 0,
          weight_cache_bytes: '1.5GiB',
          device_arena: false,
        },
        scheduler: {
          discipline: 'edf',
          ema_halflife_seconds: 10,
          recency_penalty_cap: 1,
          coalescing_discount: 0,
          cost_ema_alpha: 1,
          max_queue_depth: 16,
          dispatch_timeout_seconds: 0.5,
          max_queue_delay_us: 500,
          models: {
            mlp: { weight: 2, residency: 'device', max_batch_size: 8, max_queue_delay_us: 100 },
            'resnet.v2': {},
          },
        },
        endpoints: {
          host: '0.0.0.0',
          grpc_port: 9001,
          http_port: 9000,
          metrics_port: 0,
          console_port: 0,
          max_concurrent_requests: 8,
          max_recv_msg_bytes: '64MiB',
          max_send_msg_bytes: 1000,
          allow_shared_memory: false,
        },
        logging: { level: 'debug' },
      },
    });
    assert.deepEqual(appliedOverrides, []);
    assert.equal(config.file, FILE);
    assert.equal(config.modelRepo, '/etc/models');
    const g = config.global;
    assert.equal(g.cacheDir, '/etc/hloserve/cache');
    assert.equal(g.modelControlMode, 'dynamic');
    assert.equal(g.modelPollSeconds, 2.5);
    assert.equal(g.modelUnloadGraceSeconds, 0);
    assert.equal(g.modelSettleSeconds, 1.5);
    assert.deepEqual(g.modelsInclude, ['mlp', 'resnet']);
    assert.equal(g.runtime.plugin, '/etc/hloserve/plugins/libtpu.so');
    assert.equal(g.runtime.weightCacheBytes, 1.5 * 2 ** 30);
    assert.equal(g.runtime.deviceArena, false);
    assert.equal(g.runtime.cpuAsynchronous, true);
    assert.equal(g.runtime.allocator, 'cuda_async');
    assert.equal(g.scheduler.discipline, 'edf');
    assert.deepEqual(g.scheduler.models, {
      mlp: { weight: 2, residency: 'device', maxBatchSize: 8, maxQueueDelayUs: 100 },
      'resnet.v2': { weight: 1, residency: 'system', maxBatchSize: null, maxQueueDelayUs: null },
    });
    assert.equal(g.endpoints.maxRecvMsgBytes, 64 * 2 ** 20);
    assert.equal(g.endpoints.allowSharedMemory, false);
    assert.equal(g.logging.level, 'debug');
  });

  test('loadNodeConfig reads a file and resolves against its directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'hloserve-config-'));
    try {
      const path = join(dir, 'node.yaml');
      await writeFile(path, 'model_repo: models\nglobal:\n  scheduler: {discipline: fifo}\n');
      const { config, appliedOverrides } = await loadNodeConfig(path, { HLOSERVE_LOGGING_LEVEL: 'warn' });
      assert.equal(config.modelRepo, join(dir, 'models'));
      assert.equal(config.file, path);
      assert.equal(config.global.scheduler.discipline, 'fifo');
      assert.equal(config.global.logging.level, 'warn');
      assert.deepEqual(appliedOverrides, [
        { variable: 'HLOSERVE_LOGGING_LEVEL', path: 'global.logging.level', value: 'warn' },
      ]);
      await assert.rejects(loadNodeConfig(join(dir, 'missing.yaml'), {}), /missing\.yaml: cannot read/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('plugin names and paths', () => {
    for (const name of ['cpu', 'cpu-openxla', 'cuda'])
      assert.equal(parse(withGlobal({ runtime: { plugin: name } })).config.global.runtime.plugin, name);
    assert.equal(
      parse(withGlobal({ runtime: { plugin: '/opt/pjrt/x.so' } })).config.global.runtime.plugin,
      '/opt/pjrt/x.so',
    );
    assert.equal(parse(withGlobal({ runtime: { plugin: 'x.so' } })).config.global.runtime.plugin, '/etc/hloserve/x.so');
  });

  test('null means "not set" where the key allows it', () => {
    const c = parse(
      withGlobal({ runtime: { weight_cache_bytes: null }, scheduler: { models: { m: { max_batch_size: null } } } }),
    ).config;
    assert.equal(c.global.runtime.weightCacheBytes, null);
    assert.equal(c.global.scheduler.models.m!.maxBatchSize, null);
    assert.equal(parse(withGlobal({ endpoints: { grpc_port: null } })).config.global.endpoints.grpcPort, 8001);
  });

  test('an empty global block and empty sections are fine', () => {
    assert.equal(parse({ model_repo: 'm', global: null }).config.global.endpoints.grpcPort, 8001);
    assert.equal(parse(withGlobal({ runtime: null, scheduler: {} })).config.global.runtime.plugin, 'cpu');
  });

  test('byte sizes', () => {
    assert.equal(parseByteSize(1024), 1024);
    assert.equal(parseByteSize('256MiB'), 268435456);
    assert.equal(parseByteSize('1 GB'), 1e9);
    assert.equal(parseByteSize('2kib'), 2048);
    assert.equal(parseByteSize('12'), 12);
    assert.equal(parseByteSize('1.5B'), null);
    assert.equal(parseByteSize('lots'), null);
    assert.equal(parseByteSize('3 parsecs'), null);
    assert.equal(parseByteSize(1.5), null);
  });
});

suite('node config: errors name file and path', () => {
  test('invalid YAML', () => invalid('model_repo: [\n', FILE, /invalid YAML/));
  test('duplicate keys', () => invalid('model_repo: a\nmodel_repo: b\n', FILE, /Map keys must be unique/));
  test('top level not a mapping', () => invalid('- a\n', FILE, /expected a mapping at the top level, got a list/));
  test('model_repo required', () =>
    invalid({ global: {} }, at('model_repo'), /missing; set it to the directory holding the model bundles/));
  test('model_repo must be a string', () =>
    invalid({ model_repo: 3 }, at('model_repo'), /expected a non-empty string, got 3/));
  test('unknown top-level key', () => invalid({ model_repo: 'm', gpus: 2 }, at('gpus'), /unknown key/));
  test('unknown key with a suggestion', () =>
    invalid(
      withGlobal({ scheduler: { disciplin: 'fair' } }),
      at('global.scheduler.disciplin'),
      /unknown key \(did you mean "discipline"\?\)/,
    ));
  test('unknown section', () => invalid(withGlobal({ grpc: {} }), at('global.grpc'), /unknown key/));
  test('unknown key in a model policy', () =>
    invalid(
      withGlobal({ scheduler: { models: { mlp: { pin_to_gpu: true } } } }),
      at('global.scheduler.models.mlp.pin_to_gpu'),
      /unknown key/,
    ));
  test('section must be a mapping', () =>
    invalid(withGlobal({ runtime: 'cpu' }), at('global.runtime'), /expected a mapping, got "cpu"/));
  test('global must be a mapping', () =>
    invalid({ model_repo: 'm', global: [1] }, at('global'), /expected a mapping, got a list/));
  test('model policy must be a mapping', () =>
    invalid(
      withGlobal({ scheduler: { models: { mlp: 2 } } }),
      at('global.scheduler.models.mlp'),
      /expected a mapping, got 2/,
    ));

  const range = (section: string, key: string, value: unknown, pattern: RegExp): void =>
    invalid(withGlobal({ [section]: { [key]: value } }), at(`global.${section}.${key}`), pattern);
  test('recency_penalty_cap in (0, 1]', () => {
    range('scheduler', 'recency_penalty_cap', 0, /expected a number in \(0, 1\], got 0/);
    range('scheduler', 'recency_penalty_cap', 1.01, /got 1.01/);
  });
  test('coalescing_discount in [0, 1)', () =>
    range('scheduler', 'coalescing_discount', 1, /expected a number in \[0, 1\), got 1/));
  test('cost_ema_alpha in (0, 1]', () => range('scheduler', 'cost_ema_alpha', 0, /\(0, 1\]/));
  test('weight_cache_wiggle_fraction in [0, 1)', () => range('runtime', 'weight_cache_wiggle_fraction', 1, /\[0, 1\)/));
  test('weight_cache_fraction in [0, 1]', () => range('runtime', 'weight_cache_fraction', 1.5, /\[0, 1\], got 1.5/));
  test('memory_fraction in (0, 1]', () => range('runtime', 'memory_fraction', 0, /\(0, 1\], got 0/));
  test('ema_halflife_seconds > 0', () => range('scheduler', 'ema_halflife_seconds', 0, /\(0, inf\)/));
  test('max_queue_depth is an integer >= 1', () =>
    range('scheduler', 'max_queue_depth', 2.5, /an integer in \[1, inf\), got 2.5/));
  test('max_queue_delay_us >= 0', () => range('scheduler', 'max_queue_delay_us', -1, /\[0, inf\), got -1/));
  test('dispatch_timeout_seconds > 0', () => range('scheduler', 'dispatch_timeout_seconds', -3, /got -3/));
  test('discipline', () => range('scheduler', 'discipline', 'lifo', /expected one of fair \| fifo \| edf, got "lifo"/));
  test('model_control_mode', () =>
    invalid(
      withGlobal({ model_control_mode: 'poll' }),
      at('global.model_control_mode'),
      /static \| dynamic \| explicit/,
    ));
  test('model_poll_seconds in (0, 86400]', () => {
    invalid(withGlobal({ model_poll_seconds: 0 }), at('global.model_poll_seconds'), /\(0, 86400\]/);
    invalid(withGlobal({ model_poll_seconds: 86401 }), at('global.model_poll_seconds'), /\(0, 86400\], got 86401/);
  });
  test('model_unload_grace_seconds in [0, 3600]', () => {
    invalid(withGlobal({ model_unload_grace_seconds: -1 }), at('global.model_unload_grace_seconds'), /\[0, 3600\]/);
    invalid(
      withGlobal({ model_unload_grace_seconds: 3601 }),
      at('global.model_unload_grace_seconds'),
      /\[0, 3600\], got 3601/,
    );
    invalid(withGlobal({ model_unload_grace_seconds: '5s' }), at('global.model_unload_grace_seconds'), /got "5s"/);
  });
  test('model_settle_seconds in [0.01, 60]', () => {
    invalid(withGlobal({ model_settle_seconds: 0 }), at('global.model_settle_seconds'), /\[0.01, 60\], got 0/);
    invalid(withGlobal({ model_settle_seconds: 61 }), at('global.model_settle_seconds'), /\[0.01, 60\], got 61/);
  });
  test('models_include is a list of names', () => {
    invalid(withGlobal({ models_include: 'mlp' }), at('global.models_include'), /expected a list of strings/);
    invalid(
      withGlobal({ models_include: ['mlp', 3] }),
      at('global.models_include[1]'),
      /expected a non-empty string, got 3/,
    );
  });
  test('cache_dir non-empty', () => invalid(withGlobal({ cache_dir: '' }), at('global.cache_dir'), /non-empty string/));
  test('plugin typo', () =>
    range('runtime', 'plugin', 'cdua', /expected cpu, cpu-openxla, cuda or a path to a PJRT plugin/));
  test('device_ordinal', () => range('runtime', 'device_ordinal', -1, /\[0, inf\)/));
  test('cpu_device_count', () => range('runtime', 'cpu_device_count', 0, /\[1, inf\)/));
  test('preallocate is a boolean', () => range('runtime', 'preallocate', 'yes', /expected true or false, got "yes"/));
  test('allocator', () => range('runtime', 'allocator', 'arena', /bfc \| cuda_async \| platform \| default/));
  test('weight_cache_bytes', () => {
    range('runtime', 'weight_cache_bytes', 0, /byte count in \[1, inf\)/);
    range('runtime', 'weight_cache_bytes', 'lots', /got "lots"/);
  });
  test('ports', () => {
    range('endpoints', 'grpc_port', 70000, /\[0, 65535\], got 70000/);
    range('endpoints', 'console_port', '8003', /got "8003"/);
  });
  test('max_concurrent_requests', () => range('endpoints', 'max_concurrent_requests', 0, /\[1, inf\)/));
  test('message sizes', () => range('endpoints', 'max_send_msg_bytes', '4GiB', /\[1, 2147483647\]/));
  test('allow_shared_memory', () => range('endpoints', 'allow_shared_memory', 1, /true or false/));
  test('host', () => range('endpoints', 'host', '', /non-empty string/));
  test('logging level', () => range('logging', 'level', 'verbose', /trace \| debug \| info/));
  test('model weight > 0', () =>
    invalid(
      withGlobal({ scheduler: { models: { m: { weight: 0 } } } }),
      at('global.scheduler.models.m.weight'),
      /\(0, inf\), got 0/,
    ));
  test('model residency', () =>
    invalid(
      withGlobal({ scheduler: { models: { m: { residency: 'gpu' } } } }),
      at('global.scheduler.models.m.residency'),
      /unpinned \| system \| device/,
    ));
  test('model max_batch_size >= 1', () =>
    invalid(
      withGlobal({ scheduler: { models: { m: { max_batch_size: 0 } } } }),
      at('global.scheduler.models.m.max_batch_size'),
      /\[1, inf\), got 0/,
    ));
  test('port collision inside one worker', () =>
    invalid(
      withGlobal({ endpoints: { http_port: 8001 } }),
      at('global.endpoints.http_port'),
      /port 8001 is also global\.endpoints\.grpc_port/,
    ));
  test('port 0 never collides', () => {
    const c = parse(withGlobal({ endpoints: { grpc_port: 0, http_port: 0, metrics_port: 0, console_port: 0 } })).config;
    assert.equal(c.global.endpoints.grpcPort, 0);
  });
});

suite('node config: workers', () => {
  const base = {
    model_repo: 'models',
    global: {
      runtime: { plugin: 'cuda', memory_fraction: 0.8 },
      scheduler: { discipline: 'fifo', models: { mlp: { weight: 2 } } },
      endpoints: { host: '0.0.0.0' },
    },
  };

  test('deep-merged over global, shortcuts for ordinal and ports', () => {
    const { config } = parse({
      ...base,
      workers: [
        { name: 'gpu0', device_ordinal: 0 },
        {
          name: 'gpu1',
          device_ordinal: 1,
          grpc_port: 9001,
          http_port: 9000,
          metrics_port: 9002,
          console_port: 9003,
          host: '10.0.0.2',
          runtime: { preallocate: true },
          scheduler: { models: { mlp: { residency: 'device' }, big: { weight: 3 } } },
          logging: { level: 'debug' },
        },
      ],
    });
    const [w0, w1] = config.workers;
    assert.equal(w0!.name, 'gpu0');
    assert.equal(w0!.implicit, false);
    assert.equal(w0!.settings.runtime.plugin, 'cuda');
    assert.equal(w0!.settings.endpoints.grpcPort, 8001);
    assert.equal(w1!.settings.runtime.deviceOrdinal, 1);
    assert.equal(w1!.settings.runtime.memoryFraction, 0.8);
    assert.equal(w1!.settings.runtime.preallocate, true);
    assert.equal(w1!.settings.scheduler.discipline, 'fifo');
    assert.deepEqual(w1!.settings.scheduler.models.mlp, {
      weight: 2,
      residency: 'device',
      maxBatchSize: null,
      maxQueueDelayUs: null,
    });
    assert.equal(w1!.settings.scheduler.models.big!.weight, 3);
    assert.equal(w1!.settings.endpoints.host, '10.0.0.2');
    assert.equal(w1!.settings.endpoints.consolePort, 9003);
    assert.equal(w1!.settings.logging.level, 'debug');
    assert.equal(config.global.logging.level, 'info');
    assert.equal(workerSettings(config, 'gpu1'), w1!.settings);
    assert.throws(() => workerSettings(config, 'gpu7'), /no worker named "gpu7" .* \(have: gpu0, gpu1\)/);
  });

  test('ports must differ across workers', () =>
    invalid(
      { ...base, workers: [{ name: 'a' }, { name: 'b', grpc_port: 9001 }] },
      at('workers[1].endpoints.http_port'),
      /port 8000 is also workers\[0\]\.endpoints\.http_port/,
    ));
  test('names unique', () =>
    invalid(
      {
        ...base,
        workers: [{ name: 'a' }, { name: 'a', grpc_port: 1, http_port: 2, metrics_port: 3, console_port: 4 }],
      },
      at('workers[1].name'),
      /"a" is also the name of workers\[0\]/,
    ));
  test('name required and well-formed', () => {
    invalid(
      { ...base, workers: [{ device_ordinal: 0 }] },
      at('workers[0].name'),
      /expected a worker name .* got nothing/,
    );
    invalid({ ...base, workers: [{ name: 'gpu 0' }] }, at('workers[0].name'), /got "gpu 0"/);
  });
  test('unknown key in a worker', () =>
    invalid({ ...base, workers: [{ name: 'a', gpu: 1 }] }, at('workers[0].gpu'), /unknown key/));
  test('unknown nested key in a worker', () =>
    invalid(
      { ...base, workers: [{ name: 'a', runtime: { ordinal: 1 } }] },
      at('workers[0].runtime.ordinal'),
      /unknown key/,
    ));
  test('bad shortcut value reported where written', () =>
    invalid({ ...base, workers: [{ name: 'a', grpc_port: -1 }] }, at('workers[0].grpc_port'), /\[0, 65535\], got -1/));
  test('bad override value reported under the worker', () =>
    invalid(
      { ...base, workers: [{ name: 'a', scheduler: { discipline: 'x' } }] },
      at('workers[0].scheduler.discipline'),
      /fair \| fifo \| edf/,
    ));
  test('shortcut and block together', () =>
    invalid(
      { ...base, workers: [{ name: 'a', grpc_port: 1, endpoints: { grpc_port: 2 } }] },
      at('workers[0].grpc_port'),
      /set either workers\[0\]\.grpc_port or workers\[0\]\.endpoints\.grpc_port, not both/,
    ));
  test('workers must be a non-empty list', () => {
    invalid({ ...base, workers: { a: {} } }, at('workers'), /expected a list/);
    invalid({ ...base, workers: [] }, at('workers'), /empty/);
    invalid({ ...base, workers: ['a'] }, at('workers[0]'), /expected a mapping, got "a"/);
  });

  test('deepMerge: mappings merge, lists and scalars replace', () => {
    assert.deepEqual(deepMerge({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3] }, e: 2 }), {
      a: { b: 1, c: [3] },
      d: 1,
      e: 2,
    });
    assert.deepEqual(deepMerge({ a: { b: 1 } }, { a: null }), { a: null });
    assert.deepEqual(deepMerge(undefined, { a: 1 }), { a: 1 });
  });

  test('buildNodeConfig does not modify its input', () => {
    const doc = { model_repo: 'm', global: { runtime: {} } };
    buildNodeConfig(doc, { env: { HLOSERVE_RUNTIME_PLUGIN: 'cuda' } });
    assert.deepEqual(doc, { model_repo: 'm', global: { runtime: {} } });
  });
});

suite('node config: serve without --config (flagConfig)', () => {
  test('HLOSERVE_* variables override the built-in settings, as they do a file', () => {
    const loaded = flagConfig('/srv/models', {
      HLOSERVE_ENDPOINTS_HTTP_PORT: '18000',
      HLOSERVE_SCHEDULER_DISCIPLINE: 'edf',
    });
    const s = workerSettings(loaded.config);
    assert.equal(s.endpoints.httpPort, 18000);
    assert.equal(s.scheduler.discipline, 'edf');
    assert.deepEqual(
      loaded.appliedOverrides.map((o) => o.variable),
      ['HLOSERVE_SCHEDULER_DISCIPLINE', 'HLOSERVE_ENDPOINTS_HTTP_PORT'],
    );
  });

  test('--model-repo beats HLOSERVE_MODEL_REPO, which beats the examples default', () => {
    assert.equal(flagConfig('/srv/flag', { HLOSERVE_MODEL_REPO: '/srv/env' }).config.modelRepo, '/srv/flag');
    assert.equal(flagConfig(undefined, { HLOSERVE_MODEL_REPO: '/srv/env' }).config.modelRepo, '/srv/env');
    assert.match(flagConfig(undefined, {}).config.modelRepo, /examples\/models$/);
  });

  test('a bad variable is refused, naming it', () => {
    assert.throws(
      () => flagConfig('/srv/models', { HLOSERVE_ENDPOINTS_GRPC_PORT: 'abc' }),
      /HLOSERVE_ENDPOINTS_GRPC_PORT: expected an integer/,
    );
  });
});
