import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SERVER_NODE_FLAGS } from '../src/node-flags.js';

const loader = fileURLToPath(new URL('../src/node-code-cache.js', import.meta.url));

interface Seen {
  withCache: string[];
  withoutCache: string[];
  newSpaceMb: number;
  workerNewSpaceMb: number;
}

/**
 * Runs a node under the serving flags that loads http2 and tls (the way the entry point does, or not),
 * then turns pretenuring off as the entry point does, and reports which of Node's modules were
 * compiled from its code cache (Node's internal count, --expose-internals) and the sizes of its
 * young generation and of a worker's made with the hook threads' limit.
 */
function run(throughLoader: boolean): Seen {
  const script = `
    import { createRequire } from 'node:module';
    import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
    import { Worker } from 'node:worker_threads';
    import { loadNodeModules, setHeapFlagsToDefaults } from ${JSON.stringify(loader)};
    const require = createRequire(import.meta.url);
    if (${throughLoader}) {
      setHeapFlagsToDefaults();
      loadNodeModules(require, ['http2', 'tls', 'no-such-node-module']);
    }
    else { require('http2'); require('tls'); }
    setFlagsFromString('--no-allocation-site-pretenuring');
    const usage = require('internal/test/binding').internalBinding('builtins').getCacheUsage();
    // Fill the young generation so that it grows to its largest.
    let keep = [];
    for (let i = 0; i < 2e6; i++) { keep.push({ i, a: [i] }); if (keep.length > 1e5) keep = []; }
    const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20;
    // An eval'd worker's code is an ES module too here (--input-type).
    const body = "import { parentPort } from 'node:worker_threads'; import { getHeapSpaceStatistics } from 'node:v8';" +
      "let k=[];for(let i=0;i<2e6;i++){k.push({i,a:[i]});if(k.length>1e5)k=[];}" +
      "parentPort.postMessage(getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20)";
    const w = new Worker(body, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: 16 } });
    const workerNewSpaceMb = await new Promise((r) => w.once('message', r));
    await w.terminate();
    console.log(JSON.stringify({ withCache: [...usage.compiledWithCache], withoutCache: [...usage.compiledWithoutCache], newSpaceMb: newSpace(), workerNewSpaceMb }));
  `;
  // Without NODE_OPTIONS: the test runner's (--expose-gc) is a V8 flag, which refuses the cache too.
  const { NODE_OPTIONS: _, ...env } = process.env;
  const r = spawnSync(
    process.execPath,
    [...SERVER_NODE_FLAGS, '--expose-internals', '--no-warnings', '--input-type=module', '-e', script],
    { encoding: 'utf8', timeout: 60_000, env },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Seen;
}

suite("Node's own modules under the serving flags (node-code-cache.ts)", () => {
  test("loaded after setHeapFlagsToDefaults, they come from Node's code cache; the heap keeps its sizes", () => {
    const seen = run(true);
    for (const m of ['http2', 'tls']) {
      assert.ok(seen.withCache.includes(m), `${m} compiled from the cache`);
      assert.ok(!seen.withoutCache.includes(m), `${m} not compiled from source`);
    }
    // 8 MB semi-spaces as the command line said (two of them), not the default 16 MB.
    assert.equal(seen.newSpaceMb, 16);
    // The hook threads' limit gives a worker what the flag gave it before it was set back.
    assert.equal(seen.workerNewSpaceMb, 16);
  });

  test('loaded under the flags as given, Node compiles them from source (what the entry point avoids)', () => {
    const seen = run(false);
    for (const m of ['http2', 'tls']) assert.ok(seen.withoutCache.includes(m), `${m} compiled from source`);
    assert.equal(seen.newSpaceMb, 16);
  });
});
