/**
 * One supervised worker: a child `hloserve serve` process, restarted with backoff when it exits
 * unasked. Its listening ports are read from its own "listening" log record, so workers on
 * OS-assigned ports (tests) are found as well as those on base_port + i.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { setClampedTimeout } from '@hloserve/common/timers';
import { pipeLines } from './log-mux.js';
import { RESTART_RESET_AFTER_MS, restartDelayMs } from './backoff.js';

export interface WorkerPorts {
  readonly grpc: number;
  readonly http: number;
  readonly metrics: number;
  readonly console: number;
}

export interface WorkerProcessSpec {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** SIGTERM, then SIGKILL after this long. */
  readonly stopGraceMs: number;
}

export interface WorkerEvents {
  started(name: string, pid: number | undefined): void;
  listening(name: string, ports: WorkerPorts): void;
  /**
   * The process ended. Returning false means the supervisor replaced it (a spare took its place):
   * it is not restarted. `restartInMs` is null when the exit was asked for.
   */
  exited(name: string, code: number | null, signal: NodeJS.Signals | null, restartInMs: number | null): boolean;
  log(line: string): void;
}

export class WorkerProcess {
  private child: ChildProcess | null = null;
  private startedAt = 0;
  private consecutive = 0;
  private stopping = false;
  private restartTimer: ReturnType<typeof setTimeout> | null = null;
  restarts = 0;
  ports: WorkerPorts | null = null;

  constructor(
    readonly spec: WorkerProcessSpec,
    private readonly events: WorkerEvents,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): void {
    this.startedAt = Date.now();
    const child = spawn(this.spec.command, [...this.spec.args], {
      env: { ...process.env, ...this.spec.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.events.started(this.spec.name, child.pid);
    const onLine = (line: string) => {
      if (!line.startsWith('{') || !line.includes('"listening"')) return;
      try {
        const rec = JSON.parse(line) as { msg?: string } & Partial<WorkerPorts>;
        if (rec.msg === 'listening' && typeof rec.grpc === 'number' && typeof rec.http === 'number') {
          this.ports = { grpc: rec.grpc, http: rec.http, metrics: rec.metrics ?? -1, console: rec.console ?? -1 };
          this.events.listening(this.spec.name, this.ports);
        }
      } catch {
        /* not a record */
      }
    };
    pipeLines(this.spec.name, child.stdout!, this.events.log, onLine);
    pipeLines(this.spec.name, child.stderr!, this.events.log, onLine);
    child.once('exit', (code, signal) => {
      this.child = null;
      if (this.stopping) {
        this.events.exited(this.spec.name, code, signal, null);
        return;
      }
      if (Date.now() - this.startedAt >= RESTART_RESET_AFTER_MS) this.consecutive = 0;
      this.consecutive++;
      this.restarts++;
      const delay = restartDelayMs(this.consecutive);
      if (!this.events.exited(this.spec.name, code, signal, delay)) return;
      this.restartTimer = setClampedTimeout(() => {
        this.restartTimer = null;
        if (!this.stopping) this.start();
      }, delay);
    });
  }

  /** Kills a worker that stopped answering; the exit handler restarts it. */
  kill(): void {
    this.child?.kill('SIGKILL');
  }

  /** SIGTERM (the worker drains), SIGKILL after the grace period; resolves when it is gone. */
  stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setClampedTimeout(() => child.kill('SIGKILL'), this.spec.stopGraceMs);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }
}
