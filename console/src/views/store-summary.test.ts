import { describe, expect, test } from 'vitest';
import type { StoreHealth } from '../api/types.js';
import { storeSummary } from './store-summary.js';

const sqlite: StoreHealth = {
  dialect: 'sqlite',
  location: '/var/cache/hloserve/state/hloserve.sqlite',
  reachable: true,
  latencyMs: 0.0421,
  migrations: { applied: 1, known: 1, latest: '0000_init' },
  error: null,
};

describe('the state store line of the Settings screen', () => {
  test('names the store, where it is, its round trip and its migrations', () => {
    expect(storeSummary('sqlite', sqlite)).toBe(
      'SQLite at /var/cache/hloserve/state/hloserve.sqlite · reachable, 0.04 ms round trip · migrations 1 of 1 (0000_init)',
    );
    expect(
      storeSummary('postgres', {
        ...sqlite,
        dialect: 'postgres',
        location: 'postgres://db:5432/hloserve',
        latencyMs: 23.4,
        migrations: { applied: 1, known: 2, latest: '0000_init' },
      }),
    ).toBe(
      'PostgreSQL at postgres://db:5432/hloserve · reachable, 23 ms round trip · migrations 1 of 2 (0000_init), 1 not applied',
    );
  });

  test('a store that does not answer says why', () => {
    expect(
      storeSummary('postgres', {
        ...sqlite,
        dialect: 'postgres',
        location: 'postgres://db:5432/hloserve',
        reachable: false,
        latencyMs: null,
        migrations: null,
        error: 'no answer in 2000 ms',
      }),
    ).toBe('PostgreSQL at postgres://db:5432/hloserve · not answering: no answer in 2000 ms');
  });

  test('an engine that reports no health still names its store', () => {
    expect(storeSummary('postgres', undefined)).toBe('PostgreSQL');
  });
});
