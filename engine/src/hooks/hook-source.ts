/**
 * Turns a bundle's hooks file into a URL a hook thread can import. Every hook is loaded as an ES
 * module under a name derived from its content hash, so a reload with new content gets a fresh
 * module instance (Node caches modules by URL for the life of a thread), while unchanged content,
 * across reloads and renames, reuses the same one. A TypeScript hook is transpiled once per hash.
 */
import { createHash } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ServeError } from '@hloserve/common/errors';
import type { BundleHooks } from '../bundle/bundle.js';
import { readBundleFile } from '../bundle/bundle-file.js';

export interface HookSource {
  readonly url: string;
  readonly sha256: string;
}

export async function prepareHookSource(hooks: BundleHooks, cacheDir: string): Promise<HookSource> {
  const text = await readBundleFile(hooks.path, 'utf8');
  const sha256 = createHash('sha256').update(hooks.language).update('\0').update(text).digest('hex');
  // model.mjs is imported in place so that its relative imports resolve. model.js has no
  // package.json to say it is an ES module, and model.ts must be transpiled: both are written
  // to the cache as .mjs.
  if (hooks.path.endsWith('.mjs')) return { url: `${pathToFileURL(hooks.path).href}?v=${sha256.slice(0, 16)}`, sha256 };
  const dir = join(cacheDir, 'hooks');
  const file = join(dir, `${sha256}.mjs`);
  const code = hooks.language === 'ts' ? await transpile(text, hooks.path) : text;
  await mkdir(dir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, code);
  await rename(tmp, file);
  return { url: pathToFileURL(file).href, sha256 };
}

async function transpile(text: string, path: string): Promise<string> {
  // Loaded only when a bundle has a TypeScript hook: the compiler is large.
  const ts = (await import('typescript')).default;
  const out = ts.transpileModule(text, {
    fileName: path,
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: false },
  });
  const errors = (out.diagnostics ?? []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    const first = ts.flattenDiagnosticMessageText(errors[0]!.messageText, '\n');
    throw new ServeError('HLO_ERR_BUNDLE_INVALID', `${path}: TypeScript hook does not compile: ${first}`);
  }
  return out.outputText;
}
