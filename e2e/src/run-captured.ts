import { spawn } from 'node:child_process';
import { setClampedTimeout } from '@hloserve/common/timers';

export interface Captured {
  /** The exit code; null when it was killed (its time ran out, or a signal). */
  status: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/**
 * Runs a program to its end and gives what it printed, without blocking this thread. A test that
 * has started a server as a child process reads the server's log pipes on this thread: with
 * spawnSync the pipes are not read while the program runs, and a server that logs more than a
 * pipe holds (64 KiB) blocks in write(2), and with it the requests the program is waiting on.
 */
export function runCaptured(command: string, args: readonly string[], o: RunOptions): Promise<Captured> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: o.env ?? process.env, cwd: o.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const timer = setClampedTimeout(() => child.kill('SIGKILL'), o.timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    // 'close', not 'exit': the pipes are read to their end.
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({
        status: code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
}
