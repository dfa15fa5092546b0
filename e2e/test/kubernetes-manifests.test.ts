import { suite, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { parseNodeConfig, workerSettings } from '@hloserve/engine/config/node-config';
import { repoRoot } from '../src/server-process.js';

// deploy/kubernetes: the manifests are decoded strictly into the Kubernetes and KServe API types by
// the Go module whose root they share (deploy/kubernetes/go.mod, package check); the node.yaml they hand hloserve is checked
// here by hloserve's own configuration loader, which refuses unknown keys and variables.
const manifestsDir = join(repoRoot, 'deploy', 'kubernetes');

type Manifest = Record<string, unknown> & { kind?: string; metadata?: { name?: string } };

function manifests(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(join(manifestsDir, file), 'utf8'))
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

function one(file: string, kind: string): Manifest {
  const found = manifests(file).filter((m) => m.kind === kind);
  assert.equal(found.length, 1, `${file} holds one ${kind}`);
  return found[0]!;
}

const goSkip = process.env.HLOSERVE_TEST_GO
  ? false
  : 'go is not on PATH (or the test set-up did not run): the manifests were not decoded into the Kubernetes and KServe types';

suite('Kubernetes and KServe manifests (deploy/kubernetes)', () => {
  test(
    'every manifest decodes strictly into the real API types, and a misspelt field fails (go test)',
    { skip: goSkip, timeout: 40 * 60_000 },
    () => {
      const env: NodeJS.ProcessEnv = { ...process.env };
      for (const key of ['GOMODCACHE', 'GOCACHE', 'GOFLAGS', 'GOTOOLCHAIN'])
        env[key] = process.env[`HLOSERVE_TEST_${key}`];
      const t0 = performance.now();
      // -vet=off: vet would first analyse every dependency (about as long again on a cold cache);
      // the check's own code is small and vetted by hand.
      const r = spawnSync(process.env.HLOSERVE_TEST_GO!, ['test', '-vet=off', './...'], {
        cwd: manifestsDir,
        env,
        encoding: 'utf8',
      });
      console.log(`go test ./... in deploy/kubernetes: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      assert.equal(r.status, 0, `go test failed:\n${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /^ok\s/m);
    },
  );

  test("the node Deployment's node.yaml is one hloserve accepts, listening where the Deployment says", () => {
    const cm = one('node.yaml', 'ConfigMap') as { data: Record<string, string>; metadata: { name: string } };
    const loaded = parseNodeConfig(cm.data['node.yaml']!, { file: `ConfigMap ${cm.metadata.name}`, env: {} });
    assert.equal(loaded.config.modelRepo, '/models');
    const s = workerSettings(loaded.config);
    assert.equal(s.runtime.plugin, 'cuda');
    assert.deepEqual(
      [s.endpoints.host, s.endpoints.httpPort, s.endpoints.grpcPort, s.endpoints.metricsPort, s.endpoints.consolePort],
      ['0.0.0.0', 8000, 8001, 8002, 8003],
    );
  });

  test("the ServingRuntime's variables are real settings: the image's node.yaml moved to KServe's path and ports", () => {
    const runtime = one('kserve.yaml', 'ServingRuntime') as {
      spec: { containers: { args: string[]; env: { name: string; value: string }[] }[] };
    };
    const [container] = runtime.spec.containers;
    assert.deepEqual(container!.args, ['serve', '--config', '/etc/hloserve/node.yaml']);
    const env = Object.fromEntries(container!.env.map((e) => [e.name, e.value]));
    // The file the image carries at /etc/hloserve/node.yaml (Dockerfile), with the runtime's variables.
    const imageConfig = join(repoRoot, 'deploy', 'container', 'node.yaml');
    const loaded = parseNodeConfig(readFileSync(imageConfig, 'utf8'), { file: imageConfig, env });
    assert.equal(loaded.appliedOverrides.length, Object.keys(env).length, 'every variable took effect');
    assert.equal(loaded.config.modelRepo, '/mnt/models');
    const s = workerSettings(loaded.config);
    assert.deepEqual([s.endpoints.host, s.endpoints.httpPort, s.endpoints.grpcPort], ['0.0.0.0', 8080, 9000]);
  });

  test("the gateway Deployment's flags are ones `hloserve gateway` takes: it starts with the fleet's workers and its placement store", async () => {
    const gw = manifests('fleet.yaml').find((m) => m.kind === 'Deployment') as {
      spec: { template: { spec: { containers: { command?: string[]; args: string[] }[] } } };
    };
    const [c] = gw.spec.template.spec.containers;
    // The image's entrypoint (the hloserve CLI) runs it.
    assert.equal(c!.command, undefined);
    assert.equal(c!.args[0], 'gateway');
    // Listeners on free loopback ports, the nodes' names pointed at loopback (nothing listens
    // there: the gateway starts, lists them, and finds them not ready), the store in a scratch file.
    const scratch = mkdtempSync(join(tmpdir(), 'hloserve-k8s-gateway-'));
    const stateFile = join(scratch, 'placement.db');
    const args = c!.args
      .map((a) =>
        a.replace(/^--host=.*/, '--host=127.0.0.1').replace(/^--(http|grpc|metrics|console)-port=.*/, '--$1-port=0'),
      )
      .map((a) => a.replace(/^--state-url=sqlite:.*/, `--state-url=sqlite:${stateFile}`))
      .map((a) => a.replace(/hloserve-node-\d+\.hloserve-nodes:\d+/g, '127.0.0.1:9'));
    assert.ok(args.includes(`--state-url=sqlite:${stateFile}`), 'the manifest gives the gateway a SQLite store');
    if (!args.some((a) => a.startsWith('--console-port'))) args.push('--console-port=0');
    const child = spawn(process.execPath, [join(repoRoot, 'engine', 'dist', 'src', 'cli.js'), ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    const listening = new Promise<Record<string, unknown>>((resolve, reject) => {
      child.stderr.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        const line = log.split('\n').find((l) => l.includes('"msg":"listening"'));
        if (line) resolve(JSON.parse(line) as Record<string, unknown>);
      });
      child.on('exit', (code) => reject(new Error(`gateway exited ${code}:\n${log}`)));
    });
    try {
      const rec = await listening;
      assert.deepEqual(rec.workers, ['node-0', 'node-1']);
      assert.equal(rec.mode, 'lpt_packing');
      assert.ok(existsSync(stateFile), 'the placement store was opened');
    } finally {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
