import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { suite, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { status } from '@grpc/grpc-js';
import {
  ERROR_CATALOGUE,
  isErrorCode,
  MAX_ERROR_MESSAGE_CHARS,
  quote,
  QUOTE_CHARS,
  ServeError,
  shapeText,
  toGrpcStatus,
  toHttpStatus,
  toServeError,
  type ErrorCode,
} from '@hloserve/common/errors';
import { GrpcStatus } from '@hloserve/common/grpc-status';

const docs = resolve(fileURLToPath(import.meta.url), '..', '..', '..', '..', 'docs', 'errors.md');

suite('the error catalogue', () => {
  test('its size is pinned: adding or retiring a code is a deliberate change', () => {
    assert.equal(Object.keys(ERROR_CATALOGUE).length, 22);
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

  test('isErrorCode() knows the catalogue and nothing else, inherited names included', () => {
    for (const code of Object.keys(ERROR_CATALOGUE)) assert.ok(isErrorCode(code), code);
    for (const x of ['HLO_ERR_NOPE', 'toString', '__proto__', 'hasOwnProperty', '', null, 7, {}])
      assert.equal(isErrorCode(x), false, String(x));
  });

  test("its gRPC codes are grpc-js's: the table written out in grpc-status.ts matches the enum", () => {
    const names = Object.keys(status).filter((k) => Number.isNaN(Number(k)));
    assert.deepEqual(Object.keys(GrpcStatus).sort(), names.sort());
    for (const name of names)
      assert.equal(GrpcStatus[name as keyof typeof GrpcStatus], status[name as keyof typeof status], name);
  });

  test('docs/errors.md lists exactly the catalogue', () => {
    const text = readFileSync(docs, 'utf8');
    const listed = [...text.matchAll(/^\| `(HLO_ERR_[A-Z_]+)` \|/gm)].map((m) => m[1] as ErrorCode);
    assert.deepEqual([...listed].sort(), Object.keys(ERROR_CATALOGUE).sort());
  });
});

suite('client values in error messages', () => {
  test('quote() repeats at most a short prefix and says how long the value was', () => {
    const q = quote('n'.repeat(2 ** 20));
    assert.ok(q.length < QUOTE_CHARS + 40, q);
    assert.match(q, /\(1048576 chars\)$/);
    assert.equal(quote('ab'), "'ab'");
    assert.equal(quote('a\nb'), "'a\\nb'");
    assert.equal(quote(12n), "'12'");
    assert.equal(quote([1, 2]), '[1,2]');
  });

  test('shapeText() shows at most 8 dims of a huge shape', () => {
    const t = shapeText(new Array<number>(1_000_000).fill(1));
    assert.ok(t.length < 60, t);
    assert.match(t, /1000000 dims/);
  });

  test('a message past the cap is cut before it reaches the wire', () => {
    const e = new ServeError('HLO_ERR_INVALID_ARGUMENT', 'x'.repeat(100_000));
    assert.ok(toGrpcStatus(e).details.length < MAX_ERROR_MESSAGE_CHARS + 40);
    assert.equal(toGrpcStatus(e).code, status.INVALID_ARGUMENT);
    assert.ok(toHttpStatus(e).body.error.length < MAX_ERROR_MESSAGE_CHARS + 40);
  });
});
