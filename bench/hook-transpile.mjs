// bench/hook-transpile: how long the serving thread stops while a bundle's TypeScript hook is
// prepared (engine/src/hooks/hook-source.ts): the longest event-loop gap (a 1 ms interval timer)
// and the total time, with an empty output cache (a transpile on its own thread) and a warm one
// (the output reused); and, for comparison, the compiler imported and run on this thread, as
// prepareHookSource did before session 20. Each in a fresh process, --rounds times.
// Usage: npm run build && node bench/hook-transpile.mjs [--rounds 3]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { arg, loopGap, machine } from './stats.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const mode = process.argv[2];
if (mode === 'child') {
  const [, , , kind, dir] = process.argv;
  const path = join(dir, 'model.ts');
  const { total, maxGap } = await loopGap(async () => {
    if (kind === 'on-this-thread') {
      // As the engine did: an ES import (the CommonJS compiler's named exports scanned too).
      const ts = (await import('typescript')).default;
      ts.transpileModule(await import('node:fs').then((fs) => fs.readFileSync(path, 'utf8')), {
        fileName: path,
        reportDiagnostics: true,
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: false },
      });
    } else {
      const url = pathToFileURL(join(here, '..', 'engine', 'dist', 'src', 'hooks', 'hook-source.js')).href;
      const { prepareHookSource } = await import(url);
      await prepareHookSource({ path, language: 'ts' }, join(dir, 'cache'));
    }
  });
  console.log(JSON.stringify({ total, maxGap }));
} else {
  const rounds = Number(arg('rounds', '3'));
  console.log(`# bench/hook-transpile, machine: ${machine()}`);
  console.log('round kind             total_ms  longest_loop_gap_ms');
  for (let r = 1; r <= rounds; r++) {
    const dir = mkdtempSync(join(tmpdir(), 'hloserve-hook-transpile-'));
    writeFileSync(join(dir, 'model.ts'), 'export function preprocess(t: unknown): unknown { return t; }\n');
    for (const kind of ['on-this-thread', 'cold-cache', 'warm-cache']) {
      const out = spawnSync(process.execPath, [fileURLToPath(import.meta.url), 'child', kind, dir], {
        encoding: 'utf8',
      });
      const { total, maxGap } = JSON.parse(out.stdout.trim().split('\n').pop());
      console.log(
        `${String(r).padStart(5)} ${kind.padEnd(16)} ${total.toFixed(0).padStart(8)}  ${maxGap.toFixed(1).padStart(19)}`,
      );
    }
  }
}
