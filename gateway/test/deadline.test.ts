import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { parseGrpcTimeout } from '@hloserve/common/h2/grpc-wire';
import { forwardDeadline, grpcTimeoutHeader } from '@hloserve/gateway/routing/deadline';

suite('deadline forwarding', () => {
  test('the remaining time is forwarded to the millisecond, not rounded up to seconds', () => {
    assert.deepEqual(forwardDeadline(1_000_250, 1_000_000), { kind: 'ms', remainingMs: 250 });
    assert.deepEqual(forwardDeadline(1_001_500.7, 1_000_000), { kind: 'ms', remainingMs: 1500 });
    assert.equal(grpcTimeoutHeader(250), '250m');
    assert.equal(grpcTimeoutHeader(1500), '1500m');
  });

  test('an expired deadline is answered at the gateway; none stays none', () => {
    assert.deepEqual(forwardDeadline(1000, 1000), { kind: 'expired' });
    assert.deepEqual(forwardDeadline(999, 1000), { kind: 'expired' });
    assert.deepEqual(forwardDeadline(null, 1000), { kind: 'none' });
    assert.deepEqual(forwardDeadline(Infinity, 1000), { kind: 'none' });
  });

  test('grpc-timeout round-trips in every unit and rejects malformed values', () => {
    assert.equal(parseGrpcTimeout('250m'), 250);
    assert.equal(parseGrpcTimeout('3S'), 3000);
    assert.equal(parseGrpcTimeout('2M'), 120_000);
    assert.equal(parseGrpcTimeout('1H'), 3_600_000);
    assert.equal(parseGrpcTimeout('1500u'), 1.5);
    assert.equal(parseGrpcTimeout('2000000n'), 2);
    assert.equal(parseGrpcTimeout('123456789m'), null);
    assert.equal(parseGrpcTimeout('5s'), null);
    assert.equal(grpcTimeoutHeader(2e8), '200000S');
  });
});
