/**
 * The trial compile of an uploaded bundle, before it is installed: every module is compiled on
 * the worker's runtime (with its expected signature, so a bytecode module is checked against the
 * manifest as at load), and the result shapes PJRT reports are compared with the manifest's at
 * the module's batch size: a module compiled for another batch size is caught here, not at
 * warmup after installation. The executables are then freed.
 */
import { readBundleFile } from '../../bundle/bundle-file.js';
import { basename } from 'node:path';
import type { Runtime } from '@hloserve/native';
import { bundleError } from '../../bundle/bundle-error.js';
import { loadBundle } from '../../bundle/bundle.js';
import { CompiledModel } from '../../model/compiled-model.js';

export function trialCompiler(runtime: Runtime): (bundleDir: string) => Promise<void> {
  return async (dir) => {
    const bundle = await loadBundle(dir);
    if (bundle.kind !== 'model') return;
    const modules = new Map<number, Uint8Array>();
    for (const m of bundle.modules) modules.set(m.batchSize, await readBundleFile(m.path));
    const weights = (bundle.weights?.tensors ?? []).map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape }));
    const compiled = await CompiledModel.compile(runtime, {
      name: bundle.name,
      manifest: bundle.manifest,
      modules,
      weights,
    });
    compiled.dispose();
    for (const m of bundle.modules) {
      if (m.batchSize === 0) continue;
      const exe = await runtime.compile(modules.get(m.batchSize)!);
      try {
        bundle.manifest.executableOutputs.forEach((s, i) => {
          const expected = s.wireShape(m.batchSize);
          const got = exe.outputs[i]?.shape ?? [];
          const same = expected.length === got.length && expected.every((d, j) => d < 0 || d === got[j]);
          if (!same)
            throw bundleError(
              basename(m.path),
              `result ${i}`,
              `compiled for batch ${m.batchSize} it returns [${got.join(', ')}], the manifest says [${expected.join(', ')}]`,
            );
        });
      } finally {
        exe.dispose();
      }
    }
  };
}
