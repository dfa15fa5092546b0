import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { Cancellation, type CancelSignal } from '@hloserve/common/cancellation';

suite('Cancellation', () => {
  test('cancel() runs each listener once, in order; later cancels do nothing', () => {
    const c = new Cancellation();
    const heard: string[] = [];
    c.addEventListener('abort', () => heard.push('a'), { once: true });
    c.addEventListener('abort', () => heard.push('b'));
    assert.equal(c.aborted, false);
    c.cancel();
    c.cancel();
    assert.equal(c.aborted, true);
    assert.deepEqual(heard, ['a', 'b']);
  });

  test('a removed listener is not called; one added after the cancel never is (as with AbortSignal)', () => {
    const c = new Cancellation();
    const heard: string[] = [];
    const gone = () => heard.push('gone');
    c.addEventListener('abort', gone);
    c.removeEventListener('abort', gone);
    c.removeEventListener('abort', () => heard.push('never added'));
    c.cancel();
    c.addEventListener('abort', () => heard.push('late'));
    assert.deepEqual(heard, []);
  });

  test('a throwing listener does not keep the others from hearing', () => {
    const c = new Cancellation();
    const heard: string[] = [];
    c.addEventListener('abort', () => {
      throw new Error('listener failed');
    });
    c.addEventListener('abort', () => heard.push('second'));
    c.cancel();
    assert.deepEqual(heard, ['second']);
  });

  test('an AbortSignal is a CancelSignal too', () => {
    const ac = new AbortController();
    const s: CancelSignal = ac.signal;
    let heard = 0;
    s.addEventListener('abort', () => heard++, { once: true });
    ac.abort();
    assert.equal(s.aborted, true);
    assert.equal(heard, 1);
  });
});
