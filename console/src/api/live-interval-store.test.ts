import { describe, expect, test } from 'vitest';
import {
  createLiveIntervalStore,
  DEFAULT_LIVE_INTERVAL_MS,
  LIVE_INTERVAL_KEY,
  parseLiveInterval,
} from './live-interval-store.js';

/** One browser's storage shared by two tabs; each is told of the other's writes, as by `storage` events. */
function twoTabs(initial: Record<string, string> = {}) {
  const items = new Map(Object.entries(initial));
  const watchers: ((key: string | null) => void)[] = [];
  const tab = (i: number) =>
    createLiveIntervalStore({
      storage: () => ({
        getItem: (k) => items.get(k) ?? null,
        setItem: (k, v) => {
          items.set(k, v);
          watchers.forEach((w, j) => j !== i && w(k));
        },
        removeItem: (k) => void items.delete(k),
      }),
      watch: (changed) => void (watchers[i] = changed),
    });
  return { a: tab(0), b: tab(1), items };
}

describe('the live update interval', () => {
  test('only the offered intervals are read; anything else is the default', () => {
    expect(parseLiveInterval('2000')).toBe(2000);
    expect(parseLiveInterval('5000')).toBe(5000);
    for (const v of [null, undefined, '', '3', '1e3', '2000.0', ' 2000', '-1000', 'fast'])
      expect(parseLiveInterval(v)).toBe(DEFAULT_LIVE_INTERVAL_MS);
  });

  test('a choice is kept in the browser and every tab follows it', () => {
    const { a, b, items } = twoTabs();
    expect(a.get()).toBe(1000);
    const heard: number[] = [];
    b.subscribe((ms) => heard.push(ms));
    a.set(5000);
    expect(items.get(LIVE_INTERVAL_KEY)).toBe('5000');
    expect(b.get()).toBe(5000);
    expect(heard).toEqual([5000]);
    a.set(5000);
    expect(heard, 'the same choice again tells no one').toEqual([5000]);
  });

  test('a stored choice is read at start; a storage without one, or none at all, gives the default', () => {
    expect(twoTabs({ [LIVE_INTERVAL_KEY]: '2000' }).a.get()).toBe(2000);
    expect(twoTabs({ [LIVE_INTERVAL_KEY]: 'garbage' }).a.get()).toBe(1000);
    const noStorage = createLiveIntervalStore({ storage: () => null });
    noStorage.set(2000);
    expect(noStorage.get()).toBe(2000);
  });
});
