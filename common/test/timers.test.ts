import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { MAX_TIMER_MS, clampTimerMs } from '../src/timers.js';

suite('clampTimerMs', () => {
  test('keeps delays setTimeout can hold', () => {
    assert.equal(clampTimerMs(0), 0);
    assert.equal(clampTimerMs(12.5), 12.5);
    assert.equal(clampTimerMs(MAX_TIMER_MS), MAX_TIMER_MS);
  });
  test('negatives and NaN become 0; anything past the 32-bit cap becomes the cap', () => {
    assert.equal(clampTimerMs(-5), 0);
    assert.equal(clampTimerMs(Number.NaN), 0);
    assert.equal(clampTimerMs(MAX_TIMER_MS + 1), MAX_TIMER_MS);
    assert.equal(clampTimerMs(3e15), MAX_TIMER_MS);
    assert.equal(clampTimerMs(Number.POSITIVE_INFINITY), MAX_TIMER_MS);
  });
});
