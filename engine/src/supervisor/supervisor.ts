/**
 * The Supervisor: one worker process per device, the gateway in front of them (in this process),
 * one public endpoint. Workers listen on base_port + i (gRPC), base_port + 100 + i (HTTP),
 * base_port + 200 + i (metrics), base_port + 300 + i (console); base_port 0 lets the OS pick.
 * A worker that exits is restarted with backoff and rejoins the gateway at its new address; one
 * that stops answering health is killed and restarted. SIGTERM drains the gateway, then every
 * worker. With a single worker there is no supervisor: that worker serves the public ports.
 * With `tls` the gateway serves it on every public port and the workers listen in plaintext on
 * loopback (gateway-tls.ts).
 */
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import {
  type GatewayTls,
  serveGateway,
  type RoutingMode,
  type RunningGateway,
  type WorkerSpec,
} from '@hloserve/gateway';
import type { NodeConfig } from '../config/types.js';
import type { Logger } from '../log.js';
import { SERVER_NODE_FLAGS } from '../node-flags.js';
import type { WorkerDevice } from './devices.js';
import { WorkerProcess, type WorkerPorts } from './worker-process.js';
import { TLS_AT_GATEWAY_ENV } from './gateway-tls.js';
import { WORKER_NAME_ENV } from './wants-supervisor.js';
import { openStore } from '../state/open-store.js';
import type { Store } from '../state/store.js';
import { StorePlacementState } from './placement-state.js';

export interface SupervisorOptions {
  readonly config: NodeConfig;
  /** The node.yaml to hand to workers (null: the built-in default, serving `config.modelRepo`). */
  readonly configFile: string | null;
  /**
   * Worker-count mode: this many copies of the one worker of `config`, each with its device.
   * Null: the workers listed in node.yaml, each run by name.
   */
  readonly devices: readonly WorkerDevice[] | null;
  readonly basePort: number;
  readonly mode: RoutingMode;
  /** Per-model replica counts for lpt_packing (model -> count). */
  readonly replicas: ReadonlyMap<string, number>;
  /**
   * Warm spares (count mode only): extra workers started and kept listening outside the gateway.
   * When a worker dies, a listening spare takes its name at once and a new spare starts in the
   * background, so recovery does not wait for a process start and model compiles.
   */
  readonly spares: number;
  /** TLS for the gateway's public listeners; the workers then bind loopback in plaintext. */
  readonly tls?: GatewayTls | null;
  readonly log: Logger;
  /** Where tagged child log lines go (default: stderr). */
  readonly write?: (line: string) => void;
}

interface Slot {
  readonly name: string;
  proc: WorkerProcess;
}

// Workers run the bundled CLI where the build made one (it starts sooner), else the compiled one.
const BUNDLED_CLI = fileURLToPath(new URL('../../bundle/cli.js', import.meta.url));
const CLI = existsSync(BUNDLED_CLI) ? BUNDLED_CLI : fileURLToPath(new URL('../cli.js', import.meta.url));

const workerAddress = (host: string, p: WorkerPorts): WorkerSpec['address'] => {
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    grpc: `${h}:${p.grpc}`,
    http: `${h}:${p.http}`,
    metrics: p.metrics > 0 ? `${h}:${p.metrics}` : null,
    console: p.console > 0 ? `${h}:${p.console}` : null,
  };
};

export class Supervisor {
  private readonly slots: Slot[] = [];
  private readonly spares: WorkerProcess[] = [];
  private spareSeq = 0;
  private gateway: RunningGateway | null = null;
  private store: Store | null = null;
  private host = '127.0.0.1';

  constructor(private readonly opts: SupervisorOptions) {}

  /** Starts every worker, waits until each listens, then the gateway on the public ports. */
  async start(): Promise<RunningGateway> {
    const { config, log } = this.opts;
    const host = config.global.endpoints.host;
    const count = this.opts.devices?.length ?? config.workers.length;
    // The workers' consoles' store, opened (and migrated) before any worker starts: the gateway
    // keeps the operator's placement and its audit there.
    this.store = await openStore({ url: config.global.console.stateUrl, cacheDir: config.global.cacheDir });
    const firstListen = new Map<string, () => void>();
    const listening = new Map<string, Promise<void>>();

    // Behind a TLS gateway the workers bind loopback whatever node.yaml's host says.
    this.host = this.opts.tls ? '127.0.0.1' : host;
    for (let i = 0; i < count; i++) {
      const explicit = this.opts.devices === null ? config.workers[i]! : null;
      const name = explicit?.name ?? `worker${i}`;
      listening.set(name, new Promise<void>((r) => firstListen.set(name, r)));
      const proc = this.makeProcess(name, i, explicit !== null && !explicit.implicit, (n) => firstListen.get(n)?.());
      this.slots.push({ name, proc });
    }
    for (const s of this.slots) s.proc.start();
    const spares =
      this.opts.devices === null ? [] : Array.from({ length: this.opts.spares }, (_, j) => this.startSpare(count + j));
    await Promise.all([...listening.values(), ...spares]);

    const ep = config.global.endpoints;
    this.gateway = await serveGateway(
      {
        workers: this.slots.map((s) => ({ name: s.name, address: workerAddress(this.host, s.proc.ports!) })),
        mode: this.opts.mode,
        maxInFlight: ep.maxConcurrentRequests * count,
        workerMaxInFlight: ep.maxConcurrentRequests,
        maxMessageBytes: Math.max(ep.maxRecvMsgBytes, ep.maxSendMsgBytes),
        placement: {
          firstRebalanceComputeSeconds: 5,
          rebalanceComputeSeconds: 30,
          hysteresis: 0.1,
          defaultReplicas: 1,
          replicas: this.opts.replicas,
          forbidMemoryOversubscription: true,
        },
        state: new StorePlacementState(this.store, hostname()),
        onWedged: (n) => {
          log.warn('worker stopped answering health; killing it for a restart', { name: n });
          this.slots.find((s) => s.name === n)?.proc.kill();
        },
      },
      {
        host,
        grpcPort: ep.grpcPort,
        httpPort: ep.httpPort,
        metricsPort: ep.metricsPort,
        consolePort: ep.consolePort,
        tls: this.opts.tls ?? null,
      },
      (msg, fields) => log.info(msg, fields),
    );
    log.info('listening', {
      host,
      grpc: this.gateway.ports.grpc,
      http: this.gateway.ports.http,
      metrics: this.gateway.ports.metrics,
      // The fleet's console: placements are the gateway's, the rest passes through to a worker's.
      console: this.gateway.ports.console,
      tls: Boolean(this.opts.tls),
      workers: this.slots.map((s) => s.name),
      mode: this.opts.mode,
    });
    return this.gateway;
  }

  private portFor(offset: number, i: number): number {
    return this.opts.basePort === 0 ? 0 : this.opts.basePort + offset + i;
  }

  /** A worker process on port index `i`; a listed worker of node.yaml keeps its own ports. */
  private makeProcess(name: string, i: number, listed: boolean, onFirstListen: (name: string) => void): WorkerProcess {
    const { config, log } = this.opts;
    const write = this.opts.write ?? ((l: string) => process.stderr.write(l));
    const env: Record<string, string> = { HLOSERVE_SUPERVISED: '1', [WORKER_NAME_ENV]: name };
    if (this.opts.tls) env[TLS_AT_GATEWAY_ENV] = '1';
    const args = [...SERVER_NODE_FLAGS, CLI, 'serve'];
    if (this.opts.configFile) args.push('--config', this.opts.configFile);
    else args.push('--model-repo', config.modelRepo);
    if (listed) {
      // node.yaml gives each listed worker its own ports (it rejects collisions).
      args.push('--worker', name);
    } else {
      env['HLOSERVE_ENDPOINTS_GRPC_PORT'] = String(this.portFor(0, i));
      env['HLOSERVE_ENDPOINTS_HTTP_PORT'] = String(this.portFor(100, i));
      env['HLOSERVE_ENDPOINTS_METRICS_PORT'] = String(this.portFor(200, i));
      env['HLOSERVE_ENDPOINTS_CONSOLE_PORT'] = String(this.portFor(300, i));
      const dev = this.opts.devices?.[i];
      if (dev?.cudaVisibleDevices != null) {
        env['CUDA_VISIBLE_DEVICES'] = dev.cudaVisibleDevices;
        env['HLOSERVE_RUNTIME_DEVICE_ORDINAL'] = '0';
      }
    }
    const proc: WorkerProcess = new WorkerProcess(
      { name, command: process.execPath, args, env, stopGraceMs: 15_000 },
      {
        log: write,
        started: (n, pid) => log.info('worker started', { name: n, pid }),
        listening: (n, p) => {
          onFirstListen(n);
          const slot = this.slots.find((s) => s.proc === proc);
          if (slot) this.gateway?.gateway.setWorker({ name: slot.name, address: workerAddress(this.host, p) });
        },
        exited: (n, code, signal, restartInMs) => {
          if (restartInMs === null) {
            log.info('worker stopped', { name: n, code, signal });
            return false;
          }
          const slot = this.slots.find((s) => s.proc === proc);
          if (!slot) {
            log.warn('spare exited; restarting', { name: n, code, signal, restartInMs });
            return true;
          }
          this.gateway?.gateway.fleet.markDown(slot.name);
          const spareAt = this.spares.findIndex((sp) => sp.ports !== null);
          if (spareAt >= 0) {
            const spare = this.spares.splice(spareAt, 1)[0]!;
            slot.proc = spare;
            log.warn('worker exited; a spare takes its place', {
              name: slot.name,
              spare: spare.spec.name,
              code,
              signal,
            });
            this.gateway?.gateway.setWorker({ name: slot.name, address: workerAddress(this.host, spare.ports!) });
            // The dead worker's ports are free again: the new spare takes them.
            void this.startSpare(this.slots.indexOf(slot));
            return false;
          }
          log.warn('worker exited; restarting', { name: n, code, signal, restartInMs });
          return true;
        },
      },
    );
    return proc;
  }

  /** Resolves when the spare first listens (startup waits for spares too: a spare still compiling is no spare). */
  private startSpare(portIndex: number): Promise<void> {
    return new Promise((resolve) => {
      const p = this.makeProcess(`spare${this.spareSeq++}`, portIndex, false, () => resolve());
      this.spares.push(p);
      p.start();
    });
  }

  workerPid(name: string): number | undefined {
    return this.slots.find((s) => s.name === name)?.proc.pid;
  }

  /** Drains the gateway (in-flight calls finish), then stops every worker (each drains). */
  async stop(): Promise<void> {
    await this.gateway?.stop();
    await Promise.all([...this.slots.map((s) => s.proc.stop()), ...this.spares.map((p) => p.stop())]);
    await this.store?.close();
    this.opts.log.info('stopped');
  }
}
