import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { classifyFailure, droppedStatus, finalStatus, shouldRetry } from '@hloserve/gateway/routing/status';

suite('worker status mapping', () => {
  test('every gRPC code a worker answers with is preserved, only NOT_FOUND and UNAVAILABLE may fail over', () => {
    const codes = Object.values(status).filter((v): v is number => typeof v === 'number' && v !== status.OK);
    assert.equal(codes.length, 16);
    for (const code of codes) {
      const outcome = classifyFailure({ code, details: 'the worker said so' });
      if (code === status.NOT_FOUND) assert.equal(outcome, 'not_run');
      else if (code === status.UNAVAILABLE) assert.equal(outcome, 'dropped', 'an unexplained UNAVAILABLE may have run');
      else assert.equal(outcome, 'answered', `code ${code}`);
      // INVALID_ARGUMENT, INTERNAL, RESOURCE_EXHAUSTED, ... are never retried, not even as idempotent.
      if (outcome === 'answered') assert.equal(shouldRetry(outcome), false);
    }
  });

  test('a refused connection has not run: retried on the next replica', () => {
    const f = {
      code: status.UNAVAILABLE,
      details: 'No connection established. Last error: connect ECONNREFUSED 127.0.0.1:9',
    };
    assert.equal(classifyFailure(f), 'not_run');
    assert.equal(shouldRetry('not_run'), true);
  });

  test("the worker's admission refusals (model not ready, shutting down) have not run", () => {
    assert.equal(classifyFailure({ code: status.UNAVAILABLE, details: "model 'mlp' is not ready" }), 'not_run');
    assert.equal(classifyFailure({ code: status.UNAVAILABLE, details: 'server is shutting down' }), 'not_run');
  });

  test('a connection dropped mid-call may have run: never re-sent, the client gets UNAVAILABLE', () => {
    for (const details of ['Connection dropped', 'read ECONNRESET', 'Received RST_STREAM with code 2']) {
      assert.equal(classifyFailure({ code: status.UNAVAILABLE, details }), 'dropped');
    }
    assert.equal(shouldRetry('dropped'), false);
    const s = droppedStatus('w1', 'Connection dropped');
    assert.equal(s.code, status.UNAVAILABLE);
    assert.match(s.details, /w1.*may have run/);
  });

  test('a stream the worker refused (HTTP/2 REFUSED_STREAM, past GOAWAY) was not processed: next replica', () => {
    assert.equal(classifyFailure({ code: status.UNAVAILABLE, details: 'Stream refused by server' }), 'not_run');
    assert.equal(classifyFailure({ code: status.UNAVAILABLE, details: 'stream not processed (GOAWAY)' }), 'not_run');
  });

  test('when every replica failed the last worker status is returned as it was; none at all is NOT_FOUND', () => {
    const last = { code: status.RESOURCE_EXHAUSTED, details: 'queue full' };
    assert.deepEqual(finalStatus(last, 'm'), last);
    assert.equal(finalStatus(null, 'm').code, status.NOT_FOUND);
  });
});
