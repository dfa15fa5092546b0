import { describe, expect, test } from 'vitest';
import type { ModelSummary } from '../../api/types.js';
import { defaultQuery, selectModels } from './filter.js';

const model = (name: string, extra: Partial<ModelSummary> = {}): ModelSummary => ({
  name,
  version: '1',
  state: 'ready',
  resident: 'device',
  residentBytes: 0,
  pin: 'unpinned',
  weight: 1,
  batchSizes: [1],
  queueDepth: 0,
  inFlight: 0,
  requestsPerSecond: 0,
  p99Ms: null,
  loads: 0,
  evictions: 0,
  lastUsedMs: null,
  ...extra,
});

describe('selectModels', () => {
  const list = [
    model('resnet', { p99Ms: 9, resident: 'host' }),
    model('bert', { p99Ms: null, state: 'failed', resident: 'none' }),
    model('mnist', { p99Ms: 2, pin: 'device' }),
  ];
  test('searches names case-insensitively', () => {
    expect(selectModels(list, { ...defaultQuery, search: 'NIS' }).map((m) => m.name)).toEqual(['mnist']);
  });
  test('filters by state and by residency, pinned counting as its own filter', () => {
    expect(selectModels(list, { ...defaultQuery, state: 'failed' }).map((m) => m.name)).toEqual(['bert']);
    expect(selectModels(list, { ...defaultQuery, residency: 'pinned' }).map((m) => m.name)).toEqual(['mnist']);
    expect(selectModels(list, { ...defaultQuery, residency: 'host' }).map((m) => m.name)).toEqual(['resnet']);
  });
  test('sorts both ways with missing values last', () => {
    expect(selectModels(list, { ...defaultQuery, sort: 'p99Ms' }).map((m) => m.name)).toEqual([
      'mnist',
      'resnet',
      'bert',
    ]);
    expect(selectModels(list, { ...defaultQuery, sort: 'p99Ms', desc: true }).map((m) => m.name)).toEqual([
      'resnet',
      'mnist',
      'bert',
    ]);
  });
  test('never reorders the cached list', () => {
    selectModels(list, { ...defaultQuery, sort: 'p99Ms' });
    expect(list.map((m) => m.name)).toEqual(['resnet', 'bert', 'mnist']);
  });
});
