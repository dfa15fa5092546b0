import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { ClientError, Status } from '../src/client-error.js';
import { resolveDeadline } from '../src/deadline.js';
import { DEFAULT_RETRY, isRetryable, withRetry } from '../src/retry.js';

/** An attempt function that fails with the given statuses in turn, then answers 'ok'. */
function failing(codes: Status[], extra: { catalogueCode?: 'HLO_ERR_MESSAGE_TOO_LARGE' } = {}) {
  let n = 0;
  const fn = async () => {
    const code = codes[n++];
    if (code === undefined) return 'ok';
    throw new ClientError(code, `injected ${Status[code]}`, extra);
  };
  return { fn, calls: () => n };
}

const fast = { ...DEFAULT_RETRY, initialBackoffMs: 4, maxBackoffMs: 8, minBudgetMs: 5 };
const id = (e: unknown) => e as ClientError;

suite('retries', () => {
  test('RESOURCE_EXHAUSTED and UNAVAILABLE are retried until the call succeeds', async () => {
    const f = failing([Status.RESOURCE_EXHAUSTED, Status.UNAVAILABLE, Status.RESOURCE_EXHAUSTED]);
    assert.equal(await withRetry('t', fast, { deadlineMs: null, signal: undefined }, f.fn, id), 'ok');
    assert.equal(f.calls(), 4);
  });

  for (const code of [
    Status.NOT_FOUND,
    Status.INVALID_ARGUMENT,
    Status.DEADLINE_EXCEEDED,
    Status.FAILED_PRECONDITION,
  ]) {
    test(`${Status[code]} fails at once`, async () => {
      const f = failing([code]);
      await assert.rejects(withRetry('t', fast, { deadlineMs: null, signal: undefined }, f.fn, id), {
        code,
        attempts: 1,
      });
      assert.equal(f.calls(), 1);
    });
  }

  test('UNAVAILABLE is not retried when retryUnavailable is off; an oversized message never', () => {
    const p = { ...fast, retryUnavailable: false };
    assert.equal(isRetryable(new ClientError(Status.UNAVAILABLE, 'x'), p), false);
    assert.equal(isRetryable(new ClientError(Status.RESOURCE_EXHAUSTED, 'x'), p), true);
    assert.equal(
      isRetryable(
        new ClientError(Status.RESOURCE_EXHAUSTED, 'x', { catalogueCode: 'HLO_ERR_MESSAGE_TOO_LARGE' }),
        fast,
      ),
      false,
    );
  });

  test('waits are full-jitter under a doubling ceiling capped at maxBackoffMs', async () => {
    const waits: number[] = [];
    const policy = { ...DEFAULT_RETRY, initialBackoffMs: 10, multiplier: 2, maxBackoffMs: 40, maxAttempts: 5 };
    // random() = 1 - tiny: each wait is just under its ceiling, so the ceilings show.
    const random = () => 0.999;
    let last = Date.now();
    const f = failing(Array(4).fill(Status.RESOURCE_EXHAUSTED));
    const fn = async () => {
      const now = Date.now();
      waits.push(now - last);
      last = now;
      return f.fn();
    };
    assert.equal(await withRetry('t', policy, { deadlineMs: null, signal: undefined }, fn, id, random), 'ok');
    const ceilings = [10, 20, 40, 40];
    waits.slice(1).forEach((w, i) => assert.ok(w >= ceilings[i]! * 0.999 - 2, `wait ${i}: ${w} ms`));
    // random() = 0: no wait at all.
    const g = failing([Status.RESOURCE_EXHAUSTED, Status.RESOURCE_EXHAUSTED]);
    const t0 = Date.now();
    await withRetry(
      't',
      { ...policy, initialBackoffMs: 10_000 },
      { deadlineMs: null, signal: undefined },
      g.fn,
      id,
      () => 0,
    );
    assert.ok(Date.now() - t0 < 100);
  });

  test('no wait starts that would leave less than minBudgetMs of the deadline; the last error is thrown', async () => {
    const f = failing(Array(100).fill(Status.RESOURCE_EXHAUSTED));
    const policy = { ...DEFAULT_RETRY, initialBackoffMs: 1000, maxAttempts: 100 };
    const t0 = Date.now();
    await assert.rejects(
      withRetry('t', policy, { deadlineMs: t0 + 200, signal: undefined }, f.fn, id, () => 0.5),
      (e: unknown) => (e as ClientError).code === Status.RESOURCE_EXHAUSTED && (e as ClientError).attempts === 1,
    );
    assert.ok(Date.now() - t0 < 100, 'a 500 ms wait does not fit in 200 ms: it gives up at once');
  });

  test('maxAttempts bounds a call without a deadline', async () => {
    const f = failing(Array(100).fill(Status.UNAVAILABLE));
    await assert.rejects(
      withRetry('t', { ...fast, maxAttempts: 3 }, { deadlineMs: null, signal: undefined }, f.fn, id),
      { code: Status.UNAVAILABLE, attempts: 3 },
    );
  });

  test('an abort during a backoff wait ends the call with CANCELLED', async () => {
    const f = failing(Array(100).fill(Status.RESOURCE_EXHAUSTED));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 30);
    const t0 = Date.now();
    await assert.rejects(
      withRetry(
        't',
        { ...DEFAULT_RETRY, initialBackoffMs: 5000 },
        { deadlineMs: null, signal: ac.signal },
        f.fn,
        id,
        () => 1,
      ),
      { code: Status.CANCELLED },
    );
    assert.ok(Date.now() - t0 < 1000);
  });
});

suite('deadlines', () => {
  test('relative, absolute, the earlier of both, the default, and none', () => {
    const now = 1_000_000;
    assert.equal(resolveDeadline({ timeoutMs: 50 }, 10_000, now), now + 50);
    assert.equal(resolveDeadline({}, 10_000, now), now + 10_000);
    assert.equal(resolveDeadline({ timeoutMs: null }, 10_000, now), null);
    assert.equal(resolveDeadline({ deadline: new Date(now + 20) }, 10_000, now), now + 20);
    assert.equal(resolveDeadline({ deadline: now + 500, timeoutMs: 100 }, null, now), now + 100);
    assert.equal(resolveDeadline({ deadline: now + 5, timeoutMs: null }, 10_000, now), now + 5);
  });
});
