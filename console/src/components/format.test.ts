import { describe, expect, test } from 'vitest';
import { agoChangesInMs, formatAgo } from './format.js';

describe('agoChangesInMs', () => {
  // From many moments, the text is the same until the time it gives, and different right after it.
  test('says when formatAgo reads differently, at every unit', () => {
    const used = 1_000_000_000;
    for (const elapsed of [
      0, 300, 12_300, 59_400, 59_600, 100_000, 149_400, 3_599_000, 3_700_000, 86_000_000, 90_000_000,
    ])
      for (const jitter of [0, 137, 499, 501, 999]) {
        const now = used + elapsed + jitter;
        const wait = agoChangesInMs(used, now);
        const text = formatAgo(used, now);
        expect(wait).toBeGreaterThan(0);
        expect(formatAgo(used, now + wait - 25), `${elapsed + jitter} ms + ${wait - 25}`).toBe(text);
        expect(formatAgo(used, now + wait), `${elapsed + jitter} ms + ${wait}`).not.toBe(text);
      }
  });
  test('waits a second under a minute, a minute under an hour', () => {
    expect(agoChangesInMs(0, 10_000)).toBeLessThanOrEqual(1020);
    expect(agoChangesInMs(0, 600_000)).toBeGreaterThan(1020);
    expect(agoChangesInMs(0, 600_000)).toBeLessThanOrEqual(60_020);
  });
});
