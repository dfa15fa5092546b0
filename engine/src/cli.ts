#!/usr/bin/env node
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultConfig, loadNodeConfig, workerSettings } from './config/node-config.js';
import { createLogger } from './log.js';
import { missingServerNodeFlags } from './node-flags.js';
import { serve } from './serve.js';
import { runSupervisor, wantsSupervisor } from './supervisor/run.js';

const USAGE = `usage: hloserve serve [--config node.yaml] [--model-repo DIR] [--worker NAME]
                     [--workers N|auto] [--routing MODE] [--base-port P] [--replicas m=n,...] [--spares N]

  --config      node.yaml (see docs/configuration.md); HLOSERVE_* variables override it
  --model-repo  serve this model repository with default settings (no node.yaml)
  --worker      which worker of node.yaml to run (default: the first)
  --workers     run N workers (or one per NVIDIA GPU) behind the gateway (docs/gateway.md)`;

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
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
      help: { type: 'boolean' },
    },
  });
  if (values.help || positionals[0] !== 'serve') {
    console.error(USAGE);
    return values.help ? 0 : 2;
  }
  const loaded = values.config
    ? await loadNodeConfig(resolve(values.config))
    : { config: defaultConfig(resolve(values['model-repo'] ?? 'examples/models')), appliedOverrides: [] };
  const flags = { ...values, basePort: values['base-port'] };
  if (wantsSupervisor(loaded.config, flags)) {
    const log = createLogger(loaded.config.global.logging.level, { worker: 'supervisor' });
    return runSupervisor(loaded.config, values.config ? resolve(values.config) : null, flags, log);
  }
  const settings = workerSettings(loaded.config, values.worker);
  const log = createLogger(settings.logging.level, {
    worker: values.worker ?? loaded.config.workers[0]?.name ?? 'worker0',
  });
  for (const o of loaded.appliedOverrides)
    log.info('environment override', { variable: o.variable, path: o.path, value: o.value });
  const missing = missingServerNodeFlags();
  if (missing.length > 0) {
    log.warn('node started without the serving flags: expect more full garbage collections and higher tail latency', {
      flags: missing.join(' '),
      fix: `node ${missing.join(' ')} engine/dist/src/cli.js serve ... (or NODE_OPTIONS)`,
    });
  }
  log.info('starting', {
    config: loaded.config.file,
    modelRepo: loaded.config.modelRepo,
    plugin: settings.runtime.plugin,
  });
  const server = await serve(loaded.config.modelRepo, settings, log);
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
    process.exit(1);
  },
);
