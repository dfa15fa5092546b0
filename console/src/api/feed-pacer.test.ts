import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { FeedPacer } from './feed-pacer.js';

describe('FeedPacer', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const make = () => {
    const applied: string[] = [];
    const batches: number[] = [];
    const pacer = new FeedPacer({
      intervalMs: 1000,
      now: () => Date.now(),
      batch: (run) => {
        const before = applied.length;
        run();
        batches.push(applied.length - before);
      },
    });
    const write = (name: string) => () => applied.push(name);
    return { pacer, applied, batches, write };
  };

  test('after a quiet interval a write applies at once; the next ones wait for the interval, in order', () => {
    const { pacer, applied, batches, write } = make();
    pacer.enqueue(write('a'));
    expect(applied).toEqual(['a']);
    vi.advanceTimersByTime(100);
    pacer.enqueue(write('b'));
    vi.advanceTimersByTime(100);
    pacer.enqueue(write('c'));
    expect(applied).toEqual(['a']);
    vi.advanceTimersByTime(799);
    expect(applied).toEqual(['a']);
    vi.advanceTimersByTime(1);
    expect(applied).toEqual(['a', 'b', 'c']);
    expect(batches).toEqual([1, 2]);
  });

  test('a steady stream of 10 messages a second renders once a second', () => {
    const { pacer, batches, write } = make();
    for (let i = 0; i < 100; i++) {
      pacer.enqueue(write(String(i)));
      vi.advanceTimersByTime(100);
    }
    vi.advanceTimersByTime(1000);
    expect(batches.length).toBeGreaterThanOrEqual(10);
    expect(batches.length).toBeLessThanOrEqual(11);
    expect(batches.reduce((s, n) => s + n, 0)).toBe(100);
  });

  test('a snapshot flushes at once, after what was held before it', () => {
    const { pacer, applied, write } = make();
    pacer.enqueue(write('delta 1'));
    pacer.enqueue(write('delta 2'));
    pacer.enqueue(write('snapshot'), true);
    expect(applied).toEqual(['delta 1', 'delta 2', 'snapshot']);
    vi.advanceTimersByTime(5000);
    expect(applied).toHaveLength(3);
    expect(pacer.pending).toBe(0);
  });

  test('listeners hear each flush that applied writes, and only those', () => {
    const { pacer, write } = make();
    const heard = vi.fn();
    const off = pacer.onFlush(heard);
    pacer.flush();
    expect(heard).not.toHaveBeenCalled();
    pacer.enqueue(write('a'));
    expect(heard).toHaveBeenCalledTimes(1);
    expect(pacer.flushes).toBe(1);
    off();
    pacer.enqueue(write('b'), true);
    expect(heard).toHaveBeenCalledTimes(1);
  });
  test('a new interval holds writes longer or lets them go sooner, from the last flush', () => {
    const { pacer, applied, write } = make();
    pacer.enqueue(write('a'));
    vi.advanceTimersByTime(100);
    pacer.enqueue(write('b'));
    pacer.setIntervalMs(5000);
    vi.advanceTimersByTime(1000);
    expect(applied, 'held past the old interval').toEqual(['a']);
    vi.advanceTimersByTime(3900);
    expect(applied, 'applied 5 s after the last flush').toEqual(['a', 'b']);
    // Steady writes every 500 ms: one flush each 5 s.
    for (let t = 0; t < 10_000; t += 500) {
      pacer.enqueue(write(String(t)));
      vi.advanceTimersByTime(500);
    }
    expect(pacer.flushes).toBeLessThanOrEqual(4);
    vi.advanceTimersByTime(1500);
    pacer.enqueue(write('c'));
    pacer.setIntervalMs(1000);
    expect(applied.at(-1), 'more than a second since the last flush: at once').toBe('c');
    pacer.enqueue(write('d'));
    pacer.setIntervalMs(2000);
    vi.advanceTimersByTime(1999);
    expect(applied.at(-1)).toBe('c');
    vi.advanceTimersByTime(1);
    expect(applied.at(-1)).toBe('d');
  });
});
