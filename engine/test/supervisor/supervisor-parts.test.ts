import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { restartDelayMs } from '../../src/supervisor/backoff.js';
import { resolveWorkerDevices } from '../../src/supervisor/devices.js';
import { tagLine } from '../../src/supervisor/log-mux.js';
import { wantsSupervisor } from '../../src/supervisor/run.js';
import { defaultConfig } from '../../src/config/node-config.js';
import { ownWorkerName, WORKER_NAME_ENV } from '../../src/supervisor/wants-supervisor.js';

suite('supervisor parts', () => {
  test('restart backoff: 250 ms doubling, capped at 30 s', () => {
    assert.deepEqual([0, 1, 2, 3, 4].map(restartDelayMs), [0, 250, 500, 1000, 2000]);
    assert.equal(restartDelayMs(20), 30_000);
  });

  test("log lines keep their content and carry the worker's name", () => {
    assert.deepEqual(JSON.parse(tagLine('worker2', '{"level":"info","msg":"model ready","worker":"worker0"}')), {
      level: 'info',
      msg: 'model ready',
      worker: 'worker2',
    });
    // A worker's own "listening" is not the node's.
    assert.equal(JSON.parse(tagLine('w', '{"msg":"listening","grpc":1}')).msg, 'worker listening');
    assert.equal(tagLine('w', 'plain text {'), '[w] plain text {');
    assert.equal(tagLine('w', '{not json'), '[w] {not json');
  });

  test('--workers auto gives each GPU one worker; a count gives CPU workers; bad values are refused', () => {
    assert.deepEqual(resolveWorkerDevices('auto', { CUDA_VISIBLE_DEVICES: '2,3' }), [
      { cudaVisibleDevices: '2' },
      { cudaVisibleDevices: '3' },
    ]);
    assert.throws(() => resolveWorkerDevices('auto', { CUDA_VISIBLE_DEVICES: '' }), /no NVIDIA GPU/);
    assert.deepEqual(resolveWorkerDevices('2'), [{ cudaVisibleDevices: null }, { cudaVisibleDevices: null }]);
    for (const bad of ['0', '-1', '1.5', 'many']) assert.throws(() => resolveWorkerDevices(bad), /--workers/);
  });

  test('a supervisor runs for two or more workers, never inside a supervised worker or for --worker', () => {
    const one = defaultConfig('/tmp/models');
    assert.equal(wantsSupervisor(one, {}, {}), false);
    assert.equal(wantsSupervisor(one, { workers: '1' }, {}), false);
    assert.equal(wantsSupervisor(one, { workers: '3' }, {}), true);
    assert.equal(wantsSupervisor(one, { workers: 'auto' }, {}), true);
    assert.equal(wantsSupervisor(one, { workers: '3' }, { HLOSERVE_SUPERVISED: '1' }), false);
    assert.equal(wantsSupervisor(one, { workers: '3', worker: 'worker0' }, {}), false);
  });

  test("a worker's own name: --worker, else the supervisor's (only when supervised), else node.yaml's first", () => {
    const one = defaultConfig('/tmp/models');
    const first = one.workers[0]!.name;
    assert.equal(ownWorkerName(one, undefined, {}), first);
    assert.equal(ownWorkerName(one, undefined, { HLOSERVE_SUPERVISED: '1', [WORKER_NAME_ENV]: 'worker3' }), 'worker3');
    assert.equal(ownWorkerName(one, undefined, { [WORKER_NAME_ENV]: 'worker3' }), first);
    assert.equal(ownWorkerName(one, 'gpu1', { HLOSERVE_SUPERVISED: '1', [WORKER_NAME_ENV]: 'worker3' }), 'gpu1');
  });
});
