// The coverage gate of `npm test`: V8's own block coverage of every process the node suites start
// (NODE_V8_COVERAGE), mapped back to the TypeScript by c8 through tsc's source maps. What counts and
// the floors live in .c8rc.json. The bundled engine (engine/dist/bundle) is not counted: e2e servers
// run it, and its map would credit the whole of a file for one executed line of it. Console code is
// covered by Vitest and Playwright, not here.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';

const config = JSON.parse(readFileSync('.c8rc.json', 'utf8'));

/** The environment that makes every node process under the suite write its coverage; clears old data. */
export function coverageEnv() {
  const dir = resolve(config['temp-directory']);
  rmSync(dir, { recursive: true, force: true });
  return { NODE_V8_COVERAGE: dir };
}

/**
 * Prints the summary and writes the HTML report; with `floors`, answers non-zero under one of them
 * (a selection of the tests would be, so only the whole suite is held to them).
 */
export function checkCoverage(floors) {
  const args = ['node_modules/c8/bin/c8.js', 'report', ...(floors ? [] : ['--check-coverage=false'])];
  const r = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (r.status === 0) console.log(`run-tests: coverage report in ${config['report-dir']}/index.html`);
  else console.error(`run-tests: coverage is under a floor in .c8rc.json (report: ${config['report-dir']})`);
  // The raw profiles are large (every e2e server writes one); the report is what is kept.
  rmSync(resolve(config['temp-directory']), { recursive: true, force: true });
  return r.status ?? 1;
}
