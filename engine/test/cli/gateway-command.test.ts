/**
 * `hloserve gateway --state-url`: the standalone gateway keeps the operator's placement in the
 * operations store. Act on a gateway process in front of stand-in workers, SIGTERM it, start
 * another on the same SQLite file and fleet name, and the replica count is back.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { after, before, suite, test } from 'node:test';
import { standIn, type StandIn } from '../supervisor/stand-in-worker.js';

const BIN = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..', 'bin', 'hloserve.js');

suite('hloserve gateway --state-url: the placement survives a restart of the standalone gateway', () => {
  let dir: string;
  let ws: StandIn[];

  const start = (extra: string[]): Promise<{ child: ChildProcess; console: number }> => {
    const child = spawn(
      process.execPath,
      [
        BIN,
        'gateway',
        ...ws.flatMap((w, i) => [
          '--worker',
          `w${i}=127.0.0.1:${w.grpcPort},127.0.0.1:1,127.0.0.1:${w.httpPort},127.0.0.1:${w.httpPort}`,
        ]),
        '--grpc-port=0',
        '--http-port=0',
        '--metrics-port=-1',
        '--console-port=0',
        ...extra,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    return new Promise((res, rej) => {
      let err = '';
      createInterface({ input: child.stderr! }).on('line', (line) => {
        err += line + '\n';
        try {
          const rec = JSON.parse(line) as { msg: string; console: number };
          if (rec.msg === 'listening') res({ child, console: rec.console });
        } catch {
          /* not a record */
        }
      });
      child.once('exit', (code) => rej(new Error(`gateway exited ${code}: ${err}`)));
    });
  };
  const stop = (child: ChildProcess) =>
    new Promise<number | null>((r) => {
      child.once('exit', (code) => r(code));
      child.kill('SIGTERM');
    });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hloserve-gateway-cmd-'));
    ws = [await standIn(), await standIn()];
  });
  after(() => {
    for (const w of ws) {
      w.grpc.forceShutdown();
      w.http.close();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test('add_replica, SIGTERM, start again: the replica count is back; another fleet name does not see it', async () => {
    const store = ['--routing', 'lpt_packing', '--state-url', `sqlite:${join(dir, 'state.sqlite')}`];
    let gw = await start([...store, '--fleet', 'edge']);
    const r = await fetch(`http://127.0.0.1:${gw.console}/api/v1/placements/a/add_replica`, {
      method: 'POST',
      headers: { authorization: 'Bearer op' },
    });
    assert.equal(r.status, 200, await r.text());
    assert.equal(await stop(gw.child), 0, 'SIGTERM stops it cleanly, the store closed');

    const replicasOfA = async (port: number) => {
      const v = await fetch(`http://127.0.0.1:${port}/api/v1/placements`, { headers: { authorization: 'Bearer op' } });
      const body = (await v.json()) as { data: { models: { name: string; desiredReplicas: number }[] } };
      return body.data.models.find((m) => m.name === 'a')?.desiredReplicas;
    };
    gw = await start([...store, '--fleet', 'edge']);
    try {
      assert.equal(await replicasOfA(gw.console), 2);
    } finally {
      await stop(gw.child);
    }
    gw = await start([...store, '--fleet', 'other']);
    try {
      assert.equal(await replicasOfA(gw.console), 1);
    } finally {
      await stop(gw.child);
    }
  });

  test('--state-url on the plain gateway entry point is refused with the command to use', async () => {
    const cli = resolve(BIN, '..', '..', '..', 'gateway', 'dist', 'src', 'cli.js');
    const child = spawn(process.execPath, [cli, '--worker', 'a=127.0.0.1:1,127.0.0.1:2', '--state-url', 'sqlite:x'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    assert.equal(code, 1);
    assert.match(err, /--state-url needs the engine's operations store: start the gateway as `hloserve gateway/);
  });
});
