// Bundles the compiled CLI (engine/dist/src/cli.js, tsc's output) and everything it imports into
// one ES module, engine/dist/bundle/cli.js, which `hloserve` (engine/bin), `npm start` and the e2e
// tests run. A warm start's JS thread was mostly Node finding, reading and compiling ~270 module
// files one by one (bench/RESULTS.md, session 11); one file takes the resolving and per-file work
// away. The compiled files stay where tsc put them: worker threads, lazily required packages and
// the supervisor's child processes still load them from there.
//
// Two rewrites keep every bundled file's view of where it lives: `import.meta.url` becomes the URL
// of that file's original location (relative to the bundle, so a checkout or an image can move),
// and a CommonJS file's `__dirname`/`__filename` the same. Native addons (better-sqlite3 finds its
// .node file from its own path; pg's optional pg-native) stay external and load as before.
// Run by `npm run build` after tsc; skipped when no input is newer than the bundle.
import { build } from 'esbuild';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'engine', 'dist', 'src', 'cli.js');
const outfile = join(root, 'engine', 'dist', 'bundle', 'cli.js');
const outdir = dirname(outfile);

/** Packages loaded from node_modules at run time, not bundled. */
const EXTERNAL = [
  'better-sqlite3',
  'pg-native',
  'bufferutil',
  'utf-8-validate',
  // Loaded on first use only (a hook written in TypeScript, a control route's first request).
  'typescript',
  '@fastify/ajv-compiler',
  '@fastify/fast-json-stringify-compiler',
];

function newest(path) {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let m = 0;
  for (const name of readdirSync(path)) m = Math.max(m, newest(join(path, name)));
  return m;
}

const inputs = [
  'scripts/bundle-engine.mjs',
  'engine/dist/src',
  'common/dist',
  'native/dist',
  'proto/dist',
  'gateway/dist',
  'package-lock.json',
];
const built = existsSync(outfile) ? statSync(outfile).mtimeMs : 0;
if (!process.argv.includes('--force') && built > 0 && inputs.every((p) => newest(join(root, p)) < built)) {
  console.log('engine bundle: up to date (engine/dist/bundle/cli.js)');
  process.exit(0);
}

/** `import.meta.url`, `__dirname` and `__filename` of a bundled file, as they were before bundling. */
const keepOwnLocation = {
  name: 'keep-own-location',
  setup(b) {
    b.onLoad({ filter: /\.(m|c)?js$/ }, (args) => {
      let text = readFileSync(args.path, 'utf8');
      const rel = relative(outdir, args.path).split('\\').join('/');
      // Through the banner's constant: `import.meta` in a CommonJS file would make it an ES module.
      const url = `new URL(${JSON.stringify(rel)}, __hloserveBundleUrl).href`;
      if (text.includes('import.meta.url')) text = text.replaceAll('import.meta.url', url);
      if (/\b__(dirname|filename)\b/.test(text) && !/^\s*(import|export)\s/m.test(text))
        text = `var __filename = __hloserveFileURLToPath(${url}), __dirname = __hloserveDirname(__filename);\n` + text;
      return { contents: text, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

await rm(outdir, { recursive: true, force: true });
const result = await build({
  entryPoints: [entry],
  outdir,
  entryNames: '[name]',
  chunkNames: 'chunk-[hash]',
  // What a command imports only when it runs (the checker, the supervisor, the gateway, the
  // listeners) becomes a chunk of its own, read only when imported.
  splitting: true,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: 'linked',
  external: EXTERNAL,
  plugins: [keepOwnLocation],
  // Bundled CommonJS calls require() for Node's built-ins; an ES module has none of its own.
  banner: {
    js: [
      "import { createRequire as __hloserveCreateRequire } from 'node:module';",
      "import { fileURLToPath as __hloserveFileURLToPath } from 'node:url';",
      "import { dirname as __hloserveDirname } from 'node:path';",
      'const require = __hloserveCreateRequire(import.meta.url);',
      'const __hloserveBundleUrl = import.meta.url;',
    ].join('\n'),
  },
  logLevel: 'warning',
  metafile: true,
});
const files = Object.keys(result.metafile.inputs).length;
console.log(`engine bundle: ${files} modules -> ${relative(root, outfile)}`);
