import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './server-process.js';

/** Optional set-up steps of scripts/setup-tests.mjs and the variable each one sets. */
const STEP_VARIABLE = {
  postgres: 'HLOSERVE_TEST_PG_BIN',
  chromium: 'HLOSERVE_TEST_CHROMIUM',
} as const;

export type TestToolStep = keyof typeof STEP_VARIABLE;

/**
 * Where a tool a test needs lives: the PostgreSQL server's bin directory (initdb, postgres, pg_ctl)
 * or the Chromium executable. Uses what `run-tests.mjs --with=<step>` already set up, else runs the
 * cached set-up step now. Throws with the set-up's own message (for instance the exact apt command
 * when root is needed), so a test can fail, or skip, with it.
 */
export function testTool(step: TestToolStep): string {
  const variable = STEP_VARIABLE[step];
  const known = process.env[variable];
  if (known) return known;
  const r = spawnSync(process.execPath, [join(repoRoot, 'scripts', 'setup-tests.mjs'), step, '--json'], {
    encoding: 'utf8',
    timeout: 600_000,
  });
  if (r.status !== 0) throw new Error(`test set-up step '${step}' failed:\n${r.stderr}`);
  const env = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as Record<string, string>;
  const value = env[variable];
  if (!value) throw new Error(`test set-up step '${step}' did not report ${variable}`);
  process.env[variable] = value;
  return value;
}
