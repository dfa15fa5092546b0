// bench/module-load-stall: how long loading a model with a large MLIR text module holds the
// serving thread, for two builds side by side. Each round runs one child per build, alternating:
// a real Worker (explicit mode, compile cache off) on a repository of the mlp example and `big`, a
// text module with one inline constant of --mb MiB of hex text; the child loads `big` --loads
// times through Worker.loadModel (the path of the KServe load RPC and of a reload) while a 1 ms
// timer watches the event loop, and prints each load's time and the longest gap in it.
// Usage: npm run build && node bench/module-load-stall.mjs [--base /path/to/other/checkout]
//          [--mb 300] [--loads 3] [--rounds 3]
// --base: another checkout, built (npm run build, the addon included); default: this one only.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { clearInterval, setInterval } from 'node:timers';
import { fileURLToPath } from 'node:url';
import { arg, benchEndpoints, machine, median } from './stats.mjs';

const here = resolve(fileURLToPath(new URL('..', import.meta.url)));

if (process.argv[2] === '--child') {
  const [, , , root, repo, loads] = process.argv;
  const { defaultConfig, workerSettings } = await import(join(root, 'engine/dist/src/config/node-config.js'));
  const { createLogger } = await import(join(root, 'engine/dist/src/log.js'));
  const { Worker } = await import(join(root, 'engine/dist/src/worker/worker.js'));
  const base = workerSettings(defaultConfig(repo));
  const worker = await Worker.start({
    modelRepo: repo,
    settings: {
      ...base,
      compileCache: { maxBytes: 0 },
      modelControlMode: 'explicit',
      modelsInclude: ['a'],
      endpoints: benchEndpoints(base.endpoints),
    },
    log: createLogger('warn'),
  });
  let last = performance.now();
  let maxGap = 0;
  const iv = setInterval(() => {
    const n = performance.now();
    maxGap = Math.max(maxGap, n - last);
    last = n;
  }, 1);
  const out = [];
  for (let i = 0; i < Number(loads); i++) {
    await new Promise((r) => setTimeout(r, 50));
    maxGap = 0;
    last = performance.now();
    const t = performance.now();
    await worker.loadModel('big');
    out.push({ loadMs: performance.now() - t, maxGapMs: maxGap });
  }
  clearInterval(iv);
  await worker.stop(false);
  console.log(JSON.stringify(out));
  process.exit(0);
}

const mb = Number(arg('mb', '300'));
const loads = arg('loads', '3');
const rounds = Number(arg('rounds', '3'));
const baseDir = arg('base', null);
const builds = [['this', here], ...(baseDir ? [['base', resolve(baseDir)]] : [])];

const repo = mkdtempSync(join(tmpdir(), 'module-load-stall-'));
try {
  cpSync(join(here, 'examples/models/mlp'), join(repo, 'a'), { recursive: true });
  const big = join(repo, 'big');
  cpSync(join(here, 'examples/models/mlp'), big, { recursive: true, filter: (p) => !p.includes('.mlir') });
  rmSync(join(big, 'weights.safetensors'));
  rmSync(join(big, 'reference.safetensors'), { force: true });
  writeFileSync(
    join(big, 'manifest.yaml'),
    [
      "format_version: '2.0'",
      'name: big',
      'kind: model',
      'executable_inputs:',
      '- {name: x, dtype: f32, shape: fn, dims: {f: 4}}',
      'executable_outputs:',
      '- {name: y, dtype: f32, shape: fn, dims: {f: 4}}',
      'batching: {compiled_batch_sizes: [1]}',
      '',
    ].join('\n'),
  );
  const n = mb * 2 ** 17; // f32 elements in mb MiB of hex text
  const fd = openSync(join(big, 'model.b1.mlir'), 'w');
  writeSync(
    fd,
    'module @jit_f {\n  func.func public @main(%arg0: tensor<1x4xf32>) -> (tensor<1x4xf32> {jax.result_info = ""}) {\n    %c = stablehlo.constant dense<"0x',
  );
  const chunk = '0000803F'.repeat(2 ** 17);
  for (let i = 0; i < mb; i++) writeSync(fd, chunk);
  writeSync(
    fd,
    `"> : tensor<${n}xf32>\n    %s = stablehlo.slice %c [0:4] : (tensor<${n}xf32>) -> tensor<4xf32>\n` +
      '    %r = stablehlo.reshape %s : (tensor<4xf32>) -> tensor<1x4xf32>\n' +
      '    %y = stablehlo.add %arg0, %r : tensor<1x4xf32>\n    return %y : tensor<1x4xf32>\n  }\n}\n',
  );
  closeSync(fd);

  console.log(`# bench/module-load-stall, machine: ${machine()}; ${mb} MiB text module, ${loads} loads per child`);
  console.log('round build  load_ms (each)            longest_loop_gap_ms (each)');
  const gaps = new Map(builds.map(([name]) => [name, []]));
  for (let r = 1; r <= rounds; r++) {
    const order = r % 2 ? builds : [...builds].reverse();
    for (const [name, root] of order) {
      const child = spawnSync(
        process.execPath,
        [
          '--max-semi-space-size=8',
          '--min-semi-space-size=8',
          fileURLToPath(import.meta.url),
          '--child',
          root,
          repo,
          loads,
        ],
        { encoding: 'utf8', cwd: root },
      );
      const line = child.stdout.trim().split('\n').pop() ?? '';
      if (child.status !== 0 || !line.startsWith('[')) {
        console.log(`${String(r).padStart(5)} ${name.padEnd(6)} failed: ${(child.stderr || line).slice(-300)}`);
        continue;
      }
      const res = JSON.parse(line);
      gaps.get(name).push(...res.map((x) => x.maxGapMs));
      console.log(
        `${String(r).padStart(5)} ${name.padEnd(6)} ${res
          .map((x) => x.loadMs.toFixed(0))
          .join(', ')
          .padEnd(25)} ${res.map((x) => x.maxGapMs.toFixed(1)).join(', ')}`,
      );
    }
  }
  for (const [name, g] of gaps) {
    if (g.length) console.log(`${name}: median longest gap ${median(g).toFixed(1)} ms over ${g.length} loads`);
  }
} finally {
  rmSync(repo, { recursive: true, force: true });
}
