#!/usr/bin/env node
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { flagConfig, loadNodeConfig, workerSettings } from './config/node-config.js';
import { createLogger } from './log.js';
import { setFlagsFromString } from 'node:v8';
import { missingServerNodeFlags } from './node-flags.js';
import { USAGE } from './cli/usage.js';
import { versionText } from './cli/version.js';
import { ownWorkerName, wantsSupervisor } from './supervisor/wants-supervisor.js';
import { settingsBehindGateway } from './supervisor/gateway-tls.js';

// What a command needs is imported when it runs: `serve` starts sooner without the checker's or
// the supervisor's (and the gateway's) modules, and serve() itself loads the listeners' modules
// while the runtime starts.

class UsageError extends Error {}

async function main(): Promise<number> {
  // `hloserve gateway` takes the standalone gateway's own options (gateway-cli.ts).
  if (process.argv[2] === 'gateway') return runGateway(process.argv.slice(3));
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        'model-repo': { type: 'string' },
        worker: { type: 'string' },
        workers: { type: 'string' },
        routing: { type: 'string' },
        'base-port': { type: 'string' },
        replicas: { type: 'string' },
        spares: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === 'help') {
    console.log(USAGE);
    return 0;
  }
  switch (command) {
    case 'serve':
      if (rest.length) throw new UsageError(`serve takes no arguments, got '${rest.join(' ')}'`);
      return runServe(values);
    case 'check': {
      if (rest.length !== 1) throw new UsageError('check takes one PATH: a bundle directory or a model repository');
      const { checkPath } = await import('./cli/check.js');
      const { lines, ok } = await checkPath(rest[0]!);
      console.log(lines.join('\n'));
      return ok ? 0 : 1;
    }
    case 'version':
      console.log(versionText());
      return 0;
    case undefined:
      throw new UsageError('no command given');
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

/** The standalone gateway, able to keep its placement in the engine's operations store (--state-url). */
async function runGateway(argv: readonly string[]): Promise<number> {
  const [{ runGatewayCli }, { openStore }, { StorePlacementState }] = await Promise.all([
    import('@hloserve/gateway/gateway-cli'),
    import('./state/open-store.js'),
    import('./supervisor/placement-state.js'),
  ]);
  return runGatewayCli(argv, async (url, fleet) => {
    // A URL names the store; the cache directory only places a default SQLite file, never used here.
    const store = await openStore({ url, cacheDir: process.cwd() });
    return { state: new StorePlacementState(store, fleet), close: () => store.close() };
  });
}

interface ServeValues {
  config?: string;
  'model-repo'?: string;
  worker?: string;
  workers?: string;
  routing?: string;
  'base-port'?: string;
  replicas?: string;
  spares?: string;
}

async function runServe(values: ServeValues): Promise<number> {
  const loaded = values.config ? await loadNodeConfig(resolve(values.config)) : flagConfig(values['model-repo']);
  // Several workers (node.yaml's workers, --workers N|auto): the supervisor starts them with the
  // gateway in front; one worker serves the public ports itself (docs/gateway.md).
  const flags = { ...values, basePort: values['base-port'] };
  if (wantsSupervisor(loaded.config, flags)) {
    const log = createLogger(loaded.config.global.logging.level, { worker: 'supervisor' });
    const { runSupervisor } = await import('./supervisor/run.js');
    return runSupervisor(loaded.config, values.config ? resolve(values.config) : null, flags, log);
  }
  // A worker behind a TLS gateway serves plaintext on loopback (the gateway holds the certificate).
  const settings = settingsBehindGateway(workerSettings(loaded.config, values.worker));
  // The plugin's dlopen (tens of ms, on the addon's threads) overlaps serve()'s imports.
  void import('@hloserve/native').then(
    ({ Runtime }) => Runtime.preload(settings.runtime.plugin),
    () => undefined,
  );
  const workerName = ownWorkerName(loaded.config, values.worker);
  const log = createLogger(settings.logging.level, { worker: workerName });
  // So does a hook thread's start (Node's worker bootstrap), when the startup set has hooks.
  void import('./worker/worker.js').then(
    ({ Worker }) => Worker.preloadHookThread(loaded.config.modelRepo, settings, log),
    () => undefined,
  );
  for (const o of loaded.appliedOverrides)
    log.info('environment override', { variable: o.variable, path: o.path, value: o.value });
  // V8 pretenures an allocation site whose objects survive a scavenge; on the request path that
  // sends per-request objects straight to the old generation, which then fills and takes a
  // 10 ms mark-compact about once a second at one caller (bench/RESULTS.md, session 9). Set
  // here, before any request is served, since NODE_OPTIONS refuses this flag.
  setFlagsFromString('--no-allocation-site-pretenuring');
  const missing = missingServerNodeFlags();
  if (missing.length > 0) {
    log.warn('node started without the serving flags: expect more full garbage collections and higher tail latency', {
      flags: missing.join(' '),
      fix: `node ${missing.join(' ')} engine/dist/bundle/cli.js serve ... (or NODE_OPTIONS)`,
    });
  }
  log.info('starting', {
    config: loaded.config.file,
    modelRepo: loaded.config.modelRepo,
    plugin: settings.runtime.plugin,
  });
  const { serve } = await import('./serve.js');
  const server = await serve(loaded.config.modelRepo, settings, log, workerName);
  // Ready: the bundled start (bundled-start.ts) writes its code cache now, if it has none.
  (globalThis as Record<symbol, (() => void) | undefined>)[Symbol.for('hloserve.bundled-start.ready')]?.();
  await new Promise<void>((done) => {
    let signals = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      signals++;
      log.info('shutting down', { signal: sig, drain: signals === 1 });
      // A second signal stops waiting for queued work.
      server.stop(signals === 1).then(done, (err: Error) => {
        log.error('shutdown failed', { error: err.message });
        done();
      });
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`hloserve: ${err.message}\n`);
    if (err instanceof UsageError) process.stderr.write(`\n${USAGE}\n`);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
