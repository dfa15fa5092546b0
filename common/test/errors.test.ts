import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { status } from '@grpc/grpc-js';
import {
  ERROR_CATALOGUE,
  ServeError,
  toGrpcStatus,
  toHttpStatus,
  toServeError,
  type ErrorCode,
} from '@hloserve/common/errors';

const docs = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..', 'docs', 'errors.md');

suite('the error catalogue', () => {
  test('its size is pinned: adding or retiring a code is a deliberate change', () => {
    assert.equal(Object.keys(ERROR_CATALOGUE).length, 21);
  });

  test('every code has a gRPC status and an HTTP status of the same class', () => {
    for (const [code, spec] of Object.entries(ERROR_CATALOGUE)) {
      assert.match(code, /^HLO_ERR_[A-Z_]+$/);
      assert.ok(spec.grpc > 0 && spec.grpc <= 16, code);
      assert.ok(spec.http >= 400 && spec.http < 600, code);
      const serverSide = [status.INTERNAL, status.UNAVAILABLE, status.UNIMPLEMENTED, status.DEADLINE_EXCEEDED].includes(
        spec.grpc,
      );
      assert.equal(spec.http >= 500, serverSide, `${code}: gRPC ${spec.grpc} vs HTTP ${spec.http}`);
      assert.ok(spec.description.length > 0);
    }
  });

  test('mapping: ServeError keeps its code; AbortError is CANCELLED; PjrtError is RUNTIME; anything else INTERNAL', () => {
    const e = new ServeError('HLO_ERR_QUEUE_FULL', 'full');
    assert.deepEqual(toGrpcStatus(e), { code: status.RESOURCE_EXHAUSTED, details: 'full' });
    assert.deepEqual(toHttpStatus(e), { status: 429, body: { error: 'full', code: 'HLO_ERR_QUEUE_FULL' } });
    const abort = Object.assign(new Error('aborted'), { name: 'AbortError' });
    assert.equal(toServeError(abort).code, 'HLO_ERR_CANCELLED');
    const pjrt = Object.assign(new Error('XLA said no'), { name: 'PjrtError' });
    assert.equal(toServeError(pjrt).code, 'HLO_ERR_RUNTIME');
    assert.equal(toServeError(new TypeError('boom')).code, 'HLO_ERR_INTERNAL');
    assert.equal(toServeError('a string').message, 'a string');
  });

  test('docs/errors.md lists exactly the catalogue', () => {
    const text = readFileSync(docs, 'utf8');
    const listed = [...text.matchAll(/^\| `(HLO_ERR_[A-Z_]+)` \|/gm)].map((m) => m[1] as ErrorCode);
    assert.deepEqual([...listed].sort(), Object.keys(ERROR_CATALOGUE).sort());
  });
});
