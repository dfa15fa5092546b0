/**
 * A real PostgreSQL server for tests, started from Debian's binaries in a temporary directory and
 * listening on loopback only. initdb refuses to run as root, so as root the server runs as
 * `nobody`. Returns null (the caller skips loudly) when no binaries are installed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const POSTGRES_INSTALL_HINT = 'apt-get install -y postgresql (Debian package: initdb and postgres)';

export interface PostgresServer {
  readonly url: string;
  stop(): Promise<void>;
}

function findBinDir(): string | null {
  const dirs = [
    ...(process.env.PATH ?? '').split(':'),
    '/usr/local/bin',
    ...(existsSync('/usr/lib/postgresql')
      ? readdirSync('/usr/lib/postgresql')
          .sort()
          .reverse()
          .map((v) => `/usr/lib/postgresql/${v}/bin`)
      : []),
  ];
  for (const d of dirs) if (d && existsSync(join(d, 'initdb')) && existsSync(join(d, 'postgres'))) return d;
  return null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export async function startPostgres(): Promise<PostgresServer | null> {
  const bin = findBinDir();
  if (bin === null) return null;
  const root = mkdtempSync(join(tmpdir(), 'hloserve-pg-'));
  const data = join(root, 'data');
  const asRoot = process.getuid?.() === 0;
  // `nobody` owns the directory so the unprivileged server can write it.
  const nobody = asRoot ? Number(spawnSync('id', ['-u', 'nobody']).stdout.toString().trim()) : -1;
  const nogroup = asRoot ? Number(spawnSync('id', ['-g', 'nobody']).stdout.toString().trim()) : -1;
  if (asRoot) chownSync(root, nobody, nogroup);
  const wrap = (cmd: string, args: string[]): [string, string[]] =>
    asRoot ? ['setpriv', [`--reuid=${nobody}`, `--regid=${nogroup}`, '--clear-groups', cmd, ...args]] : [cmd, args];
  const [c, a] = wrap(join(bin, 'initdb'), ['-D', data, '-U', 'hloserve', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const init = spawnSync(c, a, { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  const [pc, pa] = wrap(join(bin, 'postgres'), [
    '-D',
    data,
    '-p',
    String(port),
    '-h',
    '127.0.0.1',
    '-k',
    root,
    '-c',
    'fsync=off',
    '-c',
    'full_page_writes=off',
  ]);
  const proc: ChildProcess = spawn(pc, pa, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const t0 = Date.now();
    const poll = (): void => {
      if (/ready to accept connections/.test(log)) return resolve();
      if (proc.exitCode !== null || Date.now() - t0 > 30_000)
        return reject(new Error(`postgres did not start: ${log}`));
      setTimeout(poll, 50);
    };
    poll();
  });
  return {
    url: `postgres://hloserve@127.0.0.1:${port}/postgres`,
    stop: async () => {
      if (proc.exitCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        proc.kill('SIGINT'); // fast shutdown
        await exited;
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}
