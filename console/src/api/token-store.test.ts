import { describe, expect, test } from 'vitest';
import { createTokenStore, TOKEN_KEY } from './token-store.js';

/** One browser's storage shared by tabs; each tab's store is told of the others' writes. */
function browser() {
  const items = new Map<string, string>();
  const tabs: ((key: string | null) => void)[] = [];
  let reads = 0;
  const storage = {
    getItem: (k: string) => (reads++, items.get(k) ?? null),
    setItem: (k: string, v: string) => {
      items.set(k, v);
      for (const t of tabs) if (t !== writer) t(k);
    },
    removeItem: (k: string) => {
      items.delete(k);
      for (const t of tabs) if (t !== writer) t(k);
    },
  };
  let writer: ((key: string | null) => void) | null = null;
  const tab = () => {
    let mine: (key: string | null) => void = () => undefined;
    const store = createTokenStore({
      storage: () => storage,
      watch: (changed) => {
        mine = changed;
        tabs.push(changed);
      },
    });
    // A tab's own writes raise no storage event in that tab, as in a browser.
    const set = store.set.bind(store);
    store.set = (token, reason) => {
      writer = mine;
      try {
        set(token, reason);
      } finally {
        writer = null;
      }
    };
    return store;
  };
  return { items, storage, tab, reads: () => reads, clear: () => (items.clear(), tabs.forEach((t) => t(null))) };
}

describe('the token store', () => {
  test('reads storage once, then answers from what it holds', () => {
    const b = browser();
    b.items.set(TOKEN_KEY, 'hls_a');
    const s = b.tab();
    for (let i = 0; i < 100; i++) expect(s.get()).toBe('hls_a');
    expect(b.reads()).toBe(1);
    s.set('hls_b');
    expect(s.get()).toBe('hls_b');
    expect(b.items.get(TOKEN_KEY)).toBe('hls_b');
    expect(b.reads()).toBe(1);
  });

  test("another tab's sign-out and sign-in reach this tab's listeners at once", () => {
    const b = browser();
    b.items.set(TOKEN_KEY, 'hls_a');
    const one = b.tab();
    const two = b.tab();
    expect(one.get()).toBe('hls_a');
    expect(two.get()).toBe('hls_a');
    const heard: (string | null)[] = [];
    two.subscribe((t) => heard.push(t));
    one.set(null, 'refused');
    expect(two.get()).toBeNull();
    expect(two.reason()).toBeNull(); // the other tab's reason is that tab's to show
    expect(one.reason()).toBe('refused');
    one.set('hls_c');
    expect(two.get()).toBe('hls_c');
    b.clear(); // storage cleared (the browser's site data removed)
    expect(two.get()).toBeNull();
    expect(heard).toEqual([null, 'hls_c', null]);
  });

  test('a write to another key, or one that leaves the token as it was, tells no one', () => {
    const b = browser();
    b.items.set(TOKEN_KEY, 'hls_a');
    const one = b.tab();
    const two = b.tab();
    two.get();
    let told = 0;
    two.subscribe(() => told++);
    one.set('hls_a');
    b.storage.setItem('hloserve.theme', 'dark');
    expect(told).toBe(0);
    expect(two.get()).toBe('hls_a');
  });

  test("a tab that has not read the token yet takes another tab's write as its first read", () => {
    const b = browser();
    const one = b.tab();
    const two = b.tab();
    let told = 0;
    two.subscribe(() => told++);
    one.set('hls_a');
    expect(told).toBe(0);
    expect(two.get()).toBe('hls_a');
  });

  test('without storage (a browser that refuses it) there is no token and setting one does not throw', () => {
    const s = createTokenStore({ storage: () => null });
    expect(s.get()).toBeNull();
    s.set('hls_a');
    expect(s.get()).toBe('hls_a'); // held for this page's life
  });
});
