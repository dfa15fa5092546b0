import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../src/server-process.js';

// The README's promise, kept in CI: a fresh clone, an empty cache and a fresh HOME, and nothing but
// the README's commands. It replays the whole suite once more (about as long as CI itself), so it
// runs only where CI=true; HLOSERVE_FRESH_CLONE marks the inner run so that it does not recurse.
const skip =
  process.env.HLOSERVE_FRESH_CLONE === '1'
    ? 'already inside a fresh-clone run (HLOSERVE_FRESH_CLONE=1): not recursing'
    : process.env.CI !== 'true'
      ? 'fresh-clone replay of the README runs in CI only (set CI=true; it takes as long as CI itself)'
      : false;

/** The shell commands of the README's quick-start block, comments stripped. */
export function readmeCommands(readme: string): string[] {
  const block = /## Quick start[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, 'README.md has a ```sh block under "## Quick start"');
  return block[1]!
    .split('\n')
    .map((l) => l.replace(/#.*$/, '').trim())
    .filter(Boolean);
}

interface Ran {
  command: string;
  seconds: number;
}

/**
 * Runs one README line in the clone. A line that starts the server (npm start) counts as passed
 * once the server logs that it is listening; it is then stopped as Ctrl-C would.
 */
function runLine(command: string, cwd: string, env: NodeJS.ProcessEnv, logFile: string): Promise<Ran> {
  const serves = /\bnpm start\b/.test(command);
  const t0 = performance.now();
  const log = createWriteStream(logFile, { flags: 'a' });
  log.write(`\n$ ${command}\n`);
  const child = spawn('bash', ['-c', command], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let listening = false;
  let tail = '';
  for (const s of [child.stdout, child.stderr]) {
    s.on('data', (chunk: Buffer) => {
      log.write(chunk);
      tail = (tail + chunk.toString()).slice(-4096);
      if (serves && !listening && tail.includes('"msg":"listening"')) {
        listening = true;
        process.kill(-child.pid!, 'SIGINT');
      }
    });
  }
  return new Promise((resolve, reject) => {
    child.on('exit', (code, signal) => {
      log.end();
      const seconds = (performance.now() - t0) / 1000;
      if (serves ? listening : code === 0) resolve({ command, seconds });
      else
        log.on('close', () =>
          reject(
            new Error(
              `'${command}' failed (exit ${code ?? signal}); log: ${logFile}\n${whatFailed(readFileSync(logFile, 'utf8'))}`,
            ),
          ),
        );
    });
  });
}

/**
 * The part of a replay's log that says what failed: the test runner's summary of failing tests when
 * there is one, else the log's end. The replay's directory is gone with the CI machine, so the
 * error has to carry it.
 */
export function whatFailed(log: string, maxLines = 60): string {
  const lines = log.split('\n');
  const summary = lines.findLastIndex((l) => /failing tests:|\d+ failed$/.test(l.trim()));
  const from = summary >= 0 ? summary : Math.max(0, lines.length - maxLines);
  return lines.slice(from, from + maxLines).join('\n');
}

test('a fresh clone passes with exactly the README commands', { skip, timeout: 50 * 60_000 }, async () => {
  const commands = readmeCommands(readFileSync(join(repoRoot, 'README.md'), 'utf8'));
  assert.ok(
    commands.some((c) => /\bnpm test\b/.test(c)),
    `README's commands include npm test: ${commands}`,
  );
  const work = mkdtempSync(join(tmpdir(), 'hloserve-fresh-'));
  const clone = join(work, 'hloserve');
  const home = join(work, 'home');
  mkdirSync(home);
  const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: repoRoot, encoding: 'utf8' }).stdout.trim();
  for (const args of [
    ['clone', '--quiet', '--no-checkout', repoRoot, clone],
    ['-C', clone, 'checkout', '--quiet', head],
  ]) {
    const r = spawnSync('git', args, { encoding: 'utf8' });
    assert.equal(r.status, 0, `git ${args.join(' ')}: ${r.stderr}`);
  }
  // Only what a new user's shell would have: no cache, tool or test variables of this run.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    LANG: process.env.LANG ?? 'C.UTF-8',
    TMPDIR: process.env.TMPDIR,
    CI: 'true',
    HLOSERVE_FRESH_CLONE: '1',
    // The server's ports, so that the replay cannot collide with a server of the outer run.
    HLOSERVE_ENDPOINTS_GRPC_PORT: '0',
    HLOSERVE_ENDPOINTS_HTTP_PORT: '0',
    HLOSERVE_ENDPOINTS_METRICS_PORT: '0',
    HLOSERVE_ENDPOINTS_CONSOLE_PORT: '0',
  };
  const logFile = join(work, 'replay.log');
  const ran: Ran[] = [];
  for (const command of commands) ran.push(await runLine(command, clone, env, logFile));
  console.log(
    `fresh clone at ${head.slice(0, 12)}: ${ran.map((r) => `${r.command}: ${r.seconds.toFixed(0)} s`).join('; ')}`,
  );
  rmSync(work, { recursive: true, force: true });
});

test("a failed replay's error carries the inner run's failing tests, or the log's end", () => {
  const nodeLog = [
    '$ npm test',
    'ℹ pass 3',
    'ℹ fail 1',
    '',
    '✖ failing tests:',
    '',
    'test at a.test.js:1:1',
    '✖ it broke',
  ];
  assert.match(whatFailed(nodeLog.join('\n')), /^✖ failing tests:[\s\S]*✖ it broke$/);
  const specLog = ['Running 2 tests', '  1 failed', '    [chromium] › a.spec.ts:3:1 › the page draws', '  1 passed'];
  assert.match(whatFailed(specLog.join('\n')), /^ {2}1 failed\n.*the page draws/);
  const other = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n');
  assert.equal(whatFailed(other, 3), 'line 97\nline 98\nline 99');
});
