import { suite, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../src/server-process.js';

const script = join(repoRoot, 'scripts', 'setup-tests.mjs');

function setup(args: string[], env: NodeJS.ProcessEnv = process.env) {
  return spawnSync(process.execPath, [script, ...args, '--json'], { encoding: 'utf8', env, timeout: 600_000 });
}

suite('test set-up (scripts/setup-tests.mjs)', () => {
  test('once set up, a second run fetches and builds nothing and reports the same tools', () => {
    const first = setup([]);
    assert.equal(first.status, 0, first.stderr);
    const again = setup([]);
    assert.equal(again.status, 0, again.stderr);
    assert.equal(again.stderr, '', `a cached run must be silent (nothing fetched):\n${again.stderr}`);
    const env = JSON.parse(again.stdout) as Record<string, string>;
    assert.deepEqual(env, JSON.parse(first.stdout));
    for (const key of ['PYTHON', 'HLOSERVE_TEST_EXPORT_PYTHON', 'PROTOC', 'HLOSERVE_PERF_ANALYZER']) {
      assert.ok(env[key]?.startsWith(join(repoRoot, '.cache')), `${key}=${env[key]} lives in the checkout's .cache`);
    }
    const py = spawnSync(env['PYTHON']!, ['-c', 'import tritonclient.grpc, tritonclient.http, numpy'], {
      encoding: 'utf8',
    });
    assert.equal(py.status, 0, py.stderr);
    const protoc = spawnSync(env['PROTOC']!, ['--version'], { encoding: 'utf8' });
    assert.match(protoc.stdout, /^libprotoc \d+/);
  });

  test('EXPECTED FAILURE - what the user must provide stops the set-up at once with what to do', (t) => {
    const noPython = setup(['python'], { ...process.env, HLOSERVE_PYTHON: join(tmpdir(), 'no-such-python3') });
    assert.equal(noPython.status, 2, noPython.stderr);
    assert.match(noPython.stderr, /^setup-tests: the tests need Python 3/m);
    // No chromium and no apt-get on PATH: the one message names the package to install.
    const emptyPath = mkdtempSync(join(tmpdir(), 'hloserve-empty-path-'));
    t.after(() => rmSync(emptyPath, { recursive: true, force: true }));
    const { HLOSERVE_TEST_CHROMIUM: _, ...rest } = process.env;
    const noChromium = setup(['chromium'], { ...rest, PATH: emptyPath });
    assert.equal(noChromium.status, 2, noChromium.stderr);
    assert.match(noChromium.stderr, /^setup-tests: the console tests need Chromium: install .*chromium/m);
  });

  test('EXPECTED FAILURE - an unknown step is refused with the list of steps', () => {
    const r = setup(['no-such-step']);
    assert.equal(r.status, 1);
    assert.match(
      r.stderr,
      /unknown setup step 'no-such-step' \(known: python, perf-analyzer, protoc, go, postgres, chromium, hadolint\)/,
    );
  });
});
