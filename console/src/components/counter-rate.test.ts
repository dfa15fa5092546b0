import { describe, expect, test } from 'vitest';
import { perMinute, pushPoint, type CounterPoint } from './counter-rate.js';

describe('counter rate', () => {
  test('the increase over the window, per minute; null under 15 s', () => {
    let h: CounterPoint[] = [];
    h = pushPoint(h, { t: 0, v: 10 });
    h = pushPoint(h, { t: 10_000, v: 12 });
    expect(perMinute(h)).toBeNull();
    h = pushPoint(h, { t: 30_000, v: 16 });
    expect(perMinute(h)).toBe(12); // 6 in half a minute
  });
  test('old samples leave the window; repeated instants are ignored', () => {
    let h: CounterPoint[] = [];
    for (let s = 0; s <= 120; s += 10) h = pushPoint(h, { t: s * 1000, v: s < 60 ? 0 : s - 50 });
    h = pushPoint(h, { t: 120_000, v: 999 });
    expect(h[0]!.t).toBe(60_000);
    expect(h[h.length - 1]!.v).toBe(70);
    expect(perMinute(h)).toBe(60); // from 10 at 60 s to 70 at 120 s
  });
  test('a counter that restarts counts from zero rather than going negative', () => {
    const h = [
      { t: 0, v: 50 },
      { t: 30_000, v: 60 },
      { t: 60_000, v: 5 },
    ];
    expect(perMinute(h)).toBe(15);
  });
});
