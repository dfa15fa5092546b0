import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { ClientError, InferenceClient, Status, tensor } from '@hloserve/client';
import { repoRoot, startServer, type ServerProcess } from '../src/server-process.js';

const x1 = () => ({ x: tensor(new Float32Array(784).fill(0.5), [1, 784]) });

const line = (text: string, series: string): number => {
  const found = text.split('\n').find((l) => l.startsWith(`${series} `));
  return found === undefined ? 0 : Number(found.slice(series.length + 1));
};

const REJECTED = 'nv_inference_request_failure{model="mlp",version="1",reason="REJECTED"}';

// mlp's queue holds one request, and a 1.5 s batching window keeps a lone request queued: the
// first call fills the queue for 1.5 s, which is what the deadline and retry tests lean on (long,
// so that a crowded machine's delays are not mistaken for the window).
const WINDOW_MS = 1500;

suite('@hloserve/client: deadlines, cancellation and retries against a one-slot queue', () => {
  let server: ServerProcess;
  const metrics = async () => (await fetch(`http://127.0.0.1:${server.ports.metrics}/metrics`)).text();

  before(async () => {
    server = await startServer({
      HLOSERVE_MODELS_INCLUDE: 'mlp',
      HLOSERVE_SCHEDULER_MAX_QUEUE_DEPTH: '1',
      HLOSERVE_SCHEDULER_MAX_QUEUE_DELAY_US: String(WINDOW_MS * 1000),
    });
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  for (const protocol of ['grpc', 'http'] as const) {
    const client = (opts: Partial<ConstructorParameters<typeof InferenceClient>[0]> = {}) =>
      new InferenceClient({ url: protocol === 'grpc' ? server.grpcUrl() : server.httpUrl(), protocol, ...opts });

    test(`${protocol}: a 100 ms deadline on a request the window holds answers DEADLINE_EXCEEDED at once`, async () => {
      const c = client();
      try {
        const mlp = c.model('mlp');
        await mlp.metadata();
        for (const opts of [() => ({ timeoutMs: 100 }), () => ({ deadline: new Date(Date.now() + 100) })]) {
          const started = Date.now();
          const err = await mlp.infer(x1(), opts()).then(
            () => assert.fail('a queued request outlived its deadline'),
            (e: unknown) => e as ClientError,
          );
          const took = Date.now() - started;
          assert.ok(err instanceof ClientError, String(err));
          assert.equal(err.code, Status.DEADLINE_EXCEEDED, err.message);
          assert.ok(took < WINDOW_MS - 100, `answered after ${took} ms, before the window closed`);
          // Over HTTP the server's own answer carries the catalogue code: the deadline reached it.
          if (protocol === 'http') assert.equal(err.catalogueCode, 'HLO_ERR_DEADLINE_EXCEEDED');
        }
      } finally {
        await c.close();
      }
    });

    test(`${protocol}: aborting the signal cancels a queued call`, async () => {
      const c = client();
      try {
        const ac = new AbortController();
        const started = Date.now();
        setTimeout(() => ac.abort(), 100);
        await assert.rejects(c.model('mlp').infer(x1(), { signal: ac.signal }), { code: Status.CANCELLED });
        assert.ok(Date.now() - started < WINDOW_MS - 100);
        // An already-aborted signal never sends.
        await assert.rejects(c.model('mlp').infer(x1(), { signal: AbortSignal.abort() }), { code: Status.CANCELLED });
      } finally {
        await c.close();
      }
    });

    test(`${protocol}: a full queue is RESOURCE_EXHAUSTED without retries, and retried until it drains with them`, async () => {
      const c = client({ retry: { initialBackoffMs: 200, maxBackoffMs: 400, maxAttempts: 100 } });
      try {
        const mlp = c.model('mlp');
        const rejected0 = line(await metrics(), REJECTED);
        const first = mlp.infer(x1());
        await new Promise((r) => setTimeout(r, 50));
        const err = await mlp.infer(x1(), { retry: false }).then(
          () => assert.fail('the queue holds one request'),
          (e: unknown) => e as ClientError,
        );
        assert.equal(err.code, Status.RESOURCE_EXHAUSTED, err.message);
        assert.equal(err.attempts, 1);
        if (protocol === 'http') {
          assert.equal(err.httpStatus, 429);
          assert.equal(err.catalogueCode, 'HLO_ERR_QUEUE_FULL');
        }
        const rejected1 = line(await metrics(), REJECTED);
        assert.equal(rejected1, rejected0 + 1);

        // With retries the second call backs off until the first leaves the queue, then succeeds.
        // Its own 1.5 s window follows once it is queued; the deadline leaves room for a crowded machine.
        const second = mlp.infer(x1(), { timeoutMs: 15_000 });
        const [a, b] = await Promise.all([first, second]);
        assert.deepEqual(a.output('logits').data, b.output('logits').data);
        assert.ok(line(await metrics(), REJECTED) > rejected1, 'the second call was refused at least once first');
      } finally {
        await c.close();
      }
    });

    test(`${protocol}: retries stop inside the deadline with the last RESOURCE_EXHAUSTED`, async () => {
      const c = client({ retry: { initialBackoffMs: 50, minBudgetMs: 100 } });
      try {
        const mlp = c.model('mlp');
        const first = mlp.infer(x1());
        await new Promise((r) => setTimeout(r, 50));
        const started = Date.now();
        const err = await mlp.infer(x1(), { timeoutMs: 600 }).then(
          () => assert.fail('the queue stays full past the deadline'),
          (e: unknown) => e as ClientError,
        );
        const took = Date.now() - started;
        assert.equal(err.code, Status.RESOURCE_EXHAUSTED, err.message);
        assert.ok(err.attempts >= 2, `attempts: ${err.attempts}`);
        assert.ok(took < 600, `gave up after ${took} ms, inside the 600 ms deadline`);
        await first;
      } finally {
        await c.close();
      }
    });
  }
});

suite('@hloserve/client loads no native module', () => {
  /** The shared objects a fresh node has loaded after importing `specifier`. */
  const sharedObjectsAfterImport = (specifier: string, then = ''): string[] => {
    const script = `const m = await import(${JSON.stringify(specifier)}); ${then}; console.log(JSON.stringify(process.report.getReport().sharedObjects));`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: repoRoot, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout.trim().split('\n').pop()!) as string[];
  };

  test('importing @hloserve/client maps no .node addon into the process', () => {
    const objects = sharedObjectsAfterImport('@hloserve/client');
    assert.ok(objects.length > 0, 'the report lists shared objects');
    assert.deepEqual(
      objects.filter((o) => o.endsWith('.node')),
      [],
    );
  });

  test('the same check sees the addon once @hloserve/native loads it', () => {
    const objects = sharedObjectsAfterImport('@hloserve/native/binding', 'm.binding()');
    assert.ok(
      objects.some((o) => o.endsWith('.node')),
      `no .node in ${objects.length} shared objects`,
    );
  });

  test('the package depends only on @hloserve/proto, @hloserve/common and @grpc/grpc-js', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'client', 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    assert.deepEqual(Object.keys(pkg.dependencies).sort(), ['@grpc/grpc-js', '@hloserve/common', '@hloserve/proto']);
  });
});
