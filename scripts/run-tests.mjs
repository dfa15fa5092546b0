// Runs every compiled test file (<pkg>/dist/test/**/*.test.js) with node's test runner, then the
// exporter's pytest suite, then the console's Playwright specs (e2e/console/*.spec.ts) in Debian's
// Chromium. --unit skips the cross-process suites in e2e/ and the browser. A substring selects
// files; one starting with e2e/console selects console specs (e.g. e2e/console/console-pin).
// --with=postgres,hadolint adds optional set-up steps of scripts/setup-tests.mjs;
// HLOSERVE_TEST_SETUP=0 skips the set-up (use what is on PATH). The whole suite also checks the
// node suites' coverage against the floors in .c8rc.json (scripts/coverage.mjs); --coverage reports
// it for a selection too, without the floors; HLOSERVE_COVERAGE=0 turns it off.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { checkCoverage, coverageEnv } from './coverage.mjs';
import { DEFAULT_STEPS, SetupNeedsAction, setupTests } from './setup-tests.mjs';

const unitOnly = process.argv.includes('--unit');
const only = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const extraSteps = process.argv
  .filter((a) => a.startsWith('--with='))
  .flatMap((a) => a.slice('--with='.length).split(','))
  .filter(Boolean);
const wholeSuite = only.length === 0 && !unitOnly;
const coverage = process.env.HLOSERVE_COVERAGE !== '0' && (wholeSuite || process.argv.includes('--coverage'));

// Set up first, and stop at once if the user must act: one clear message, not a cascade of failures.
let toolEnv = {};
if (process.env.HLOSERVE_TEST_SETUP !== '0') {
  const t0 = performance.now();
  try {
    toolEnv = setupTests([...DEFAULT_STEPS, ...extraSteps]);
  } catch (err) {
    console.error(`run-tests: test set-up stopped: ${err.message}`);
    process.exit(err instanceof SetupNeedsAction ? 2 : 1);
  }
  console.log(`run-tests: test set-up ready in ${((performance.now() - t0) / 1000).toFixed(2)} s`);
}
const pkgs = ['common', 'native', 'engine', 'gateway', 'client', 'proto', ...(unitOnly ? [] : ['e2e'])];

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const files = [];
for (const pkg of pkgs) {
  const dir = join(pkg, 'dist', 'test');
  if (existsSync(dir)) files.push(...walk(dir, []));
}
const isSpec = (o) => o.startsWith('e2e/console');
const nodeOnly = only.filter((o) => !isSpec(o));
const selected = only.length ? files.filter((f) => nodeOnly.some((o) => f.includes(o))) : files;
// The console's unit tests run under Vitest (browser code, TSX): with everything, or when asked for by name.
const withConsole = only.length === 0 || only.some((o) => o.startsWith('console'));
// The console's browser specs: with everything (not --unit), or when asked for by path.
const specFilters = only.filter(isSpec);
const withSpecs = !unitOnly && (only.length === 0 || specFilters.length > 0);
if (selected.length === 0 && !withConsole && !withSpecs) {
  console.error('run-tests: no test files found; did the build run?');
  process.exit(1);
}
if (withConsole) {
  const v = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--config', 'vite.config.ts'], {
    stdio: 'inherit',
  });
  if (v.status !== 0 || (selected.length === 0 && !withSpecs)) process.exit(v.status ?? 1);
}

// Inside CI's fresh-clone replay (e2e/test/fresh-clone.test.ts) the outer run has just run every
// spec on the same commit; the replay runs the real-engine one only, to prove that a fresh clone
// builds and serves the console and drives it in the set-up's Chromium, without doubling the time.
if (process.env.HLOSERVE_FRESH_CLONE === '1' && specFilters.length === 0)
  specFilters.push('e2e/console/console-engine');

/** Playwright on e2e/console in the Chromium the set-up found (or $CHROMIUM, or /usr/bin/chromium). */
function runConsoleSpecs() {
  const p = spawnSync(
    process.execPath,
    [
      'node_modules/@playwright/test/cli.js',
      'test',
      '-c',
      'e2e/console',
      ...specFilters.map((f) => f.slice('e2e/console/'.length) || '.'),
    ],
    { stdio: 'inherit', env: { ...process.env, ...toolEnv } },
  );
  return p.status ?? 1;
}
if (selected.length === 0) process.exit(runConsoleSpecs());

const r = spawnSync(
  process.execPath,
  ['--test', '--test-concurrency=1', '--test-reporter=spec', ...selected],
  // --expose-gc lets the lifetime tests measure RSS after a full collection.
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      ...toolEnv,
      HLOSERVE_TEST: '1',
      ...(coverage ? coverageEnv() : {}),
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --expose-gc`.trim(),
    },
  },
);
if (r.status !== 0) process.exit(r.status ?? 1);
if (coverage && checkCoverage(wholeSuite) !== 0) process.exit(1);
if (unitOnly || (only.length && !withSpecs)) process.exit(0);
if (only.length) process.exit(runConsoleSpecs());

// The exporter is Python: its tests run with pytest in the exporter's own environment.
const exportPython = toolEnv.HLOSERVE_TEST_EXPORT_PYTHON ?? process.env.PYTHON ?? 'python3';
const py = spawnSync(exportPython, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'export/tests'], {
  stdio: 'inherit',
});
if (py.status !== 0) process.exit(py.status ?? 1);
process.exit(runConsoleSpecs());
