// bench/text-module-stall: the longest event-loop gap while a large MLIR text module's `@main`
// signature is read, whole (the file decoded into one string and searched, as bundle loading did
// before session 22; the bytes decoded whole, as programSignature did) against a slice at a time
// (engine/src/bundle/text-module-signature.ts; native/lib/mlir-signature.ts). The module is @main
// and one inline constant of --mb MiB of hex text, in a temporary directory.
// Usage: npm run build && node bench/text-module-stall.mjs [--mb 100,300,600] [--rounds 3]
import { open, readFile, rm, mkdtemp } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { parseMainSignature, programSignature } from '../native/dist/lib/mlir-signature.js';
import { readTextModuleSignature } from '../engine/dist/src/bundle/text-module-signature.js';
import { arg, loopGap, machine } from './stats.mjs';

const sizes = arg('mb', '100,300,600').split(',').map(Number);
const rounds = Number(arg('rounds', '3'));
const MAIN = /func\.func\s+(?:public\s+)?@main\s*\(/;

async function writeModule(path, mb) {
  const out = createWriteStream(path);
  out.write(
    'module @jit_f {\n  func.func public @main(%arg0: tensor<1x4xf32>) -> (tensor<1x4xf32> {jax.result_info = ""}) {\n',
  );
  out.write('    %c = stablehlo.constant dense<"0x');
  const chunk = '0000803F'.repeat(2 ** 17); // 1 MiB of text
  for (let i = 0; i < mb; i++) if (!out.write(chunk)) await once(out, 'drain');
  out.write(`"> : tensor<${mb * 2 ** 17}xf32>\n    return %arg0 : tensor<1x4xf32>\n  }\n}\n`);
  out.end();
  await once(out, 'finish');
}

const kinds = {
  // Bundle loading before: the whole file as one string, then the @main check and the parse.
  'file, whole': async (path) => {
    const text = await readFile(path, 'utf8');
    if (!MAIN.test(text)) throw new Error('no @main');
    return parseMainSignature(text);
  },
  'file, in slices': async (path) => {
    const h = await open(path);
    try {
      return await readTextModuleSignature(h, path);
    } finally {
      await h.close();
    }
  },
  // The compile path (programSignature) before and now, the bytes already in memory.
  'bytes, whole': async (_path, bytes) =>
    parseMainSignature(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')),
  'bytes, in slices': async (_path, bytes) => programSignature(bytes),
};

const dir = await mkdtemp(join(tmpdir(), 'text-module-stall-'));
try {
  console.log(`# bench/text-module-stall, machine: ${machine()}`);
  console.log('size_mib round kind              total_ms  longest_loop_gap_ms  result');
  for (const mb of sizes) {
    const path = join(dir, `model-${mb}.mlir`);
    await writeModule(path, mb);
    const bytes = await readFile(path);
    for (let r = 1; r <= rounds; r++) {
      for (const [kind, fn] of Object.entries(kinds)) {
        let result = 'ok';
        const { total, maxGap } = await loopGap(async () => {
          try {
            const sig = await fn(path, bytes);
            if (!sig || sig.parameters.length !== 1) result = 'no signature';
          } catch (err) {
            result = `error: ${err.message.slice(0, 60)}`;
          }
        });
        console.log(
          `${String(mb).padStart(8)} ${String(r).padStart(5)} ${kind.padEnd(17)} ${total.toFixed(0).padStart(8)}  ${maxGap.toFixed(1).padStart(19)}  ${result}`,
        );
      }
    }
    await rm(path);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
