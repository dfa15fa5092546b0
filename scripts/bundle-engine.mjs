// Bundles the compiled CLI (engine/dist/src/cli.js, tsc's output) and everything it imports into
// one CommonJS file, engine/dist/bundle/cli.cjs, run through engine/dist/bundle/cli.js (the
// compiled engine/src/bundled-entry.ts, copied here), whose bundled start (bundled-start.ts)
// compiles it with a V8 code cache.
// `hloserve` (engine/bin), `npm start`, the e2e tests, the image and the supervisor's workers run
// it. A warm start's JS thread was mostly Node finding, reading and compiling ~280 module files one
// by one (bench/RESULTS.md, session 11); one file with a code cache takes that work away. The
// compiled files stay where tsc put them: worker threads and lazily required packages still load
// them from there.
//
// Two rewrites keep every bundled file's view of where it lives: `import.meta.url` becomes the URL
// of that file's original location (relative to the bundle, so a checkout or an image can move),
// and a CommonJS file's `__dirname`/`__filename` the same. Native addons (better-sqlite3 finds its
// .node file from its own path; pg's optional pg-native) stay external and load as before, and so
// do packages loaded only on first use (Fastify's schema compilers; typescript, which only the
// thread that transpiles a TypeScript hook requires).
// Run by `npm run build` after tsc; skipped when no input is newer than the bundle. The output
// directory is emptied first, so no code cache outlives the bundle it was made from.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { newest } from './newest-mtime.mjs';
import { rm } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = join(root, 'engine', 'dist', 'src');
const entry = join(compiled, 'cli.js');
const outdir = join(root, 'engine', 'dist', 'bundle');
const outfile = join(outdir, 'cli.cjs');
/** The compiled files that run the bundle, copied beside it (the first as `cli.js`). */
const runners = [
  ['bundled-entry.js', 'cli.js'],
  ['bundled-start.js', 'bundled-start.js'],
  ['bundle-code-cache.js', 'bundle-code-cache.js'],
  ['node-code-cache.js', 'node-code-cache.js'],
];

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

const inputs = [
  'scripts/bundle-engine.mjs',
  'engine/dist/src',
  'common/dist',
  'native/dist',
  'proto/dist',
  'gateway/dist',
  'package-lock.json',
];
const built = [outfile, ...runners.map(([, out]) => join(outdir, out))].every((f) => existsSync(f))
  ? statSync(outfile).mtimeMs
  : 0;
if (!process.argv.includes('--force') && built > 0 && inputs.every((p) => newest(join(root, p)) < built)) {
  console.log('engine bundle: up to date (engine/dist/bundle/cli.cjs)');
  process.exit(0);
}

/** `import.meta.url`, `__dirname` and `__filename` of a bundled file, as they were before bundling. */
const keepOwnLocation = {
  name: 'keep-own-location',
  setup(b) {
    b.onLoad({ filter: /\.(m|c)?js$/ }, (args) => {
      let text = readFileSync(args.path, 'utf8');
      const rel = relative(outdir, args.path).split('\\').join('/');
      const url = `new URL(${JSON.stringify(rel)}, __hloserveBundleUrl).href`;
      if (text.includes('import.meta.url')) text = text.replaceAll('import.meta.url', url);
      if (/\b__(dirname|filename)\b/.test(text) && !/^\s*(import|export)\s/m.test(text))
        text =
          `var __filename = require('node:url').fileURLToPath(${url}), __dirname = require('node:path').dirname(__filename);\n` +
          text;
      return { contents: text, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

await rm(outdir, { recursive: true, force: true });
const result = await build({
  entryPoints: [entry],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node20',
  // CommonJS, so that bundled-start.ts can compile it through vm.Script with a code cache.
  format: 'cjs',
  sourcemap: 'linked',
  external: EXTERNAL,
  plugins: [keepOwnLocation],
  banner: { js: "const __hloserveBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
  metafile: true,
});
// esbuild writes strings and identifiers as ASCII escapes but keeps the comments it keeps as they
// are; written as \u escapes, a comment's other characters make the whole file ASCII, which
// bundled-start.ts decodes as Latin-1, three times faster than UTF-8.
const text = readFileSync(outfile, 'utf8');
// eslint-disable-next-line no-control-regex
const ascii = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
if (ascii !== text) writeFileSync(outfile, ascii);
// The files that run it: the entry point (bundled-entry.js as cli.js) and what it imports, which
// import only Node's own modules and each other, so they run from here as they are (their source
// map comments would point at files not copied). The bundled start is told the bundle's identity
// (bundle-code-cache.ts), so that a start need not hash the bundle to know which bundle a cache
// was made from, and the Node modules the bundle imports, which it loads before V8's flags change
// (node-code-cache.ts).
const bundleBytes = readFileSync(outfile);
const identity = { sha256: createHash('sha256').update(bundleBytes).digest('hex'), bytes: bundleBytes.length };
const nodeModules = new Set();
for (const input of Object.values(result.metafile.inputs))
  for (const { path, external } of input.imports) {
    const name = path.replace(/^node:/, '');
    if (external && builtinModules.includes(name)) nodeModules.add(name);
  }
const fills = {
  'bundled-start.js': [
    ['const BUILT_BUNDLE = null;', `const BUILT_BUNDLE = ${JSON.stringify(identity)};`],
    ['const BUILT_NODE_MODULES = [];', `const BUILT_NODE_MODULES = ${JSON.stringify([...nodeModules].sort())};`],
  ],
};
for (const [from, to] of runners) {
  let text = readFileSync(join(compiled, from), 'utf8').replace(/\n\/\/# sourceMappingURL=.*\n?$/, '\n');
  for (const [unbuilt, filled] of fills[from] ?? []) {
    if (!text.includes(unbuilt)) throw new Error(`${from}: no '${unbuilt}' to fill in`);
    text = text.replace(unbuilt, filled);
  }
  writeFileSync(join(outdir, to), text);
}
const files = Object.keys(result.metafile.inputs).length;
console.log(
  `engine bundle: ${files} modules -> ${relative(root, outfile)} (entry ${relative(root, join(outdir, 'cli.js'))})`,
);
