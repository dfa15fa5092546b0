// Fails when the runtime import graph of the packages' sources has a cycle. A cycle makes
// module evaluation order decide whether a binding is initialised yet (TDZ errors that
// appear only in some entry points), and it is how layering rots unnoticed. Type-only
// imports are erased by tsc, so they cannot form a runtime cycle and are skipped.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const sourceDirs = ['common/src', 'proto/src', 'native/lib', 'engine/src', 'gateway/src', 'client/src', 'console/src'];
const skipDirs = new Set(['node_modules', 'dist', 'generated']);

function sources(dir, out) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (!skipDirs.has(name)) sources(path, out);
    } else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) {
      out.push(path);
    }
  }
  return out;
}

const importPattern =
  /(?:^|\n)\s*(import|export)\s+(type\s)?[^;'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function target(from, spec) {
  const base = resolve(dirname(from), spec).replace(/\.js$/, '');
  return [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts')].find((p) => existsSync(p));
}

const files = sourceDirs
  .map((d) => join(root, d))
  .filter(existsSync)
  .flatMap((d) => sources(d, []));
const edges = new Map();
for (const file of files) {
  const deps = [];
  for (const m of readFileSync(file, 'utf8').matchAll(importPattern)) {
    if (m[2]) continue;
    const dep = target(file, m[3] ?? m[4]);
    if (dep) deps.push(dep);
  }
  edges.set(file, deps);
}

const onStack = new Set();
const done = new Set();
const stack = [];
const cycles = [];
function visit(file) {
  onStack.add(file);
  stack.push(file);
  for (const dep of edges.get(file) ?? []) {
    if (onStack.has(dep)) cycles.push([...stack.slice(stack.indexOf(dep)), dep]);
    else if (!done.has(dep)) visit(dep);
  }
  stack.pop();
  onStack.delete(file);
  done.add(file);
}
for (const file of edges.keys()) if (!done.has(file)) visit(file);

if (cycles.length > 0) {
  for (const cycle of cycles) console.error(`import cycle: ${cycle.map((f) => relative(root, f)).join(' -> ')}`);
  process.exit(1);
}
console.log(`no import cycles in ${files.length} source files`);
