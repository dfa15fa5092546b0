/**
 * Turns a bundle's hooks file into a URL a hook thread can import. Every hook is loaded as an ES
 * module under a name derived from its content hash, so a reload with new content gets a fresh
 * module instance (Node caches modules by URL for the life of a thread), while unchanged content,
 * across reloads and renames, reuses the same one. A TypeScript hook is transpiled once per hash
 * (the cache keeps the output across starts), on a thread of its own (ts-transpile-thread.ts).
 */
import { createHash } from 'node:crypto';
import { access, mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ServeError } from '@hloserve/common/errors';
import { setClampedTimeout } from '@hloserve/common/timers';
import type { BundleHooks } from '../bundle/bundle.js';
import { readBundleFile } from '../bundle/bundle-file.js';
import type { TranspileAnswer, TranspileJob } from './ts-transpile-thread.js';

const TRANSPILE_URL = new URL('./ts-transpile-thread.js', import.meta.url);
/** How long a TypeScript hooks file may take to transpile (the compiler's import included). */
const TRANSPILE_LIMIT_MS = 60_000;

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
  // Written whole (a rename), so one that is there is complete: the same content needs no new one.
  if (await exists(file)) return { url: pathToFileURL(file).href, sha256 };
  const code = hooks.language === 'ts' ? await transpile(text, hooks.path) : text;
  await mkdir(dir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, code);
  await rename(tmp, file);
  return { url: pathToFileURL(file).href, sha256 };
}

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

async function transpile(text: string, path: string): Promise<string> {
  const thread = new Worker(TRANSPILE_URL, { workerData: { text, path } satisfies TranspileJob });
  let timer: ReturnType<typeof setClampedTimeout> | undefined;
  try {
    const answer = await new Promise<TranspileAnswer>((resolve, reject) => {
      thread.once('message', resolve);
      thread.once('error', reject);
      thread.once('exit', (code) => reject(new Error(`the transpiler's thread exited (code ${code})`)));
      timer = setClampedTimeout(
        () => reject(new Error(`it did not transpile within ${TRANSPILE_LIMIT_MS / 1000} s`)),
        TRANSPILE_LIMIT_MS,
      );
    });
    if ('error' in answer)
      throw new ServeError('HLO_ERR_BUNDLE_INVALID', `${path}: TypeScript hook does not compile: ${answer.error}`);
    return answer.code;
  } catch (err) {
    if (err instanceof ServeError) throw err;
    throw new ServeError(
      'HLO_ERR_BUNDLE_INVALID',
      `${path}: TypeScript hook does not compile: ${(err as Error).message}`,
    );
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    void thread.terminate();
  }
}
