import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import Fastify from 'fastify';
import { lazySchemaCompilers } from '../src/lazy-schema-compilers.js';

suite('route schemas compiled on first use', () => {
  test('requests are validated and responses serialized as with the eager compilers', async () => {
    const app = Fastify({ schemaController: { compilersFactory: lazySchemaCompilers() as never } });
    app.post(
      '/x',
      {
        schema: {
          body: {
            type: 'object',
            properties: { n: { type: 'integer', minimum: 1 } },
            required: ['n'],
            additionalProperties: false,
          },
          headers: { type: 'object', properties: { 'x-offset': { type: 'integer' } }, required: ['x-offset'] },
          response: { 200: { type: 'object', properties: { twice: { type: 'integer' } } } },
        },
      },
      async (req) => ({ twice: (req.body as { n: number }).n * 2, secret: 'not in the schema' }),
    );
    await app.ready();
    try {
      const post = (body: unknown, headers: Record<string, string> = { 'x-offset': '3' }) =>
        app.inject({ method: 'POST', url: '/x', payload: body as object, headers });
      const ok = await post({ n: 2 });
      assert.equal(ok.statusCode, 200);
      assert.deepEqual(ok.json(), { twice: 4 }, 'the response schema drops what it does not name');
      const bad = await post({ n: 0 });
      assert.equal(bad.statusCode, 400);
      assert.match(bad.json().message, /body\/n must be >= 1/);
      // The same validator again, now compiled: its errors are this call's, not the last one's.
      const missing = await post({});
      assert.equal(missing.statusCode, 400);
      assert.match(missing.json().message, /must have required property 'n'/);
      assert.equal((await post({ n: 3 })).statusCode, 200);
      const noHeader = await post({ n: 1 }, {});
      assert.equal(noHeader.statusCode, 400);
      assert.match(noHeader.json().message, /x-offset/);
    } finally {
      await app.close();
    }
  });
});
