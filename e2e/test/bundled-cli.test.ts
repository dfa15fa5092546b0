import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, suite, test } from 'node:test';
import { InferenceClient, tensor } from '@hloserve/client';
import { repoRoot, startServer, type ServerProcess } from '../src/server-process.js';

// The server the e2e suites start is the CLI as scripts/bundle-engine.mjs bundled it. What the
// bundle could break without any other suite noticing: a module that patches another package's
// internals must patch the bundled copy, and files found from a module's own location (the
// console's assets, the migrations, thread entry points) must still be found.
const bundle = join(repoRoot, 'engine', 'dist', 'bundle', 'cli.js');
const x1 = () => ({ x: tensor(new Float32Array(784).fill(0.5), [1, 784]) });

suite('the bundled CLI (engine/dist/bundle/cli.js)', () => {
  let server: ServerProcess;

  before(async () => {
    server = await startServer({ HLOSERVE_MODELS_INCLUDE: 'mlp' });
  });
  after(async () => {
    assert.equal(await server.stop(), 0);
  });

  test('is what the server runs, with a source map beside it', () => {
    assert.ok(server.child.spawnargs.includes(bundle), server.child.spawnargs.join(' '));
    assert.match(readFileSync(bundle, 'utf8'), /\/\/# sourceMappingURL=cli\.js\.map\s*$/);
    assert.ok(existsSync(`${bundle}.map`));
  });

  test('a gRPC deadline 30 days away is served (the grpc-timeout clamp patches the bundled grpc-js)', async () => {
    const c = new InferenceClient({ url: server.grpcUrl(), protocol: 'grpc' });
    try {
      const r = await c.model('mlp').infer(x1(), { deadline: new Date(Date.now() + 30 * 86_400_000) });
      assert.ok(r.outputs.length > 0);
    } finally {
      await c.close();
    }
  });

  test("the console's page and the control API's lazily compiled schemas are found from the bundle", async () => {
    const page = await fetch(`http://127.0.0.1:${server.ports.console}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html/i);
    // A route with a request schema: its validator (Ajv, loaded on first use) answers the bad body.
    const bad = await fetch(`http://127.0.0.1:${server.ports.console}/api/v1/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: 7 }),
    });
    assert.equal(bad.status, 400, await bad.text());
  });
});
