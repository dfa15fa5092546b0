import { describe, expect, test } from 'vitest';
import type { ModelView, ModelResidencyView } from '../api/types.js';
import { deviceBlocks, evictionPreview } from './device-blocks.js';

const model = (name: string, r: Partial<ModelResidencyView>): ModelView => ({
  name,
  version: '1',
  state: 'READY',
  reason: '',
  batchSizes: [1],
  drain: null,
  residency: {
    floor: 'unpinned',
    weightBytes: 100,
    deviceResident: true,
    hostResident: false,
    loading: false,
    leases: 0,
    loads: 1,
    evictions: 0,
    lastUsedAt: null,
    ...r,
  },
  policy: null,
  queue: null,
  stats: null,
});

describe('deviceBlocks', () => {
  const models = [
    model('recent', { lastUsedAt: 3000 }),
    model('pinned', { floor: 'device', lastUsedAt: 1 }),
    model('old', { lastUsedAt: 1000 }),
    model('host-only', { deviceResident: false, hostResident: true }),
    model('unused', { lastUsedAt: null, weightBytes: 50 }),
  ];
  test('pinned first, then least recently used first (never used before any), off-device models left out', () => {
    expect(deviceBlocks(models).map((b) => b.model)).toEqual(['pinned', 'unused', 'old', 'recent']);
  });
  test('a smaller budget evicts in that order, skipping pinned blocks, until what stays fits', () => {
    const blocks = deviceBlocks(models);
    // 250 bytes evictable: a 200-byte budget takes the never-used 50, then 'old'.
    expect([...evictionPreview(blocks, 200)]).toEqual(['unused']);
    expect([...evictionPreview(blocks, 199)]).toEqual(['unused', 'old']);
    expect([...evictionPreview(blocks, 0)]).toEqual(['unused', 'old', 'recent']);
    expect(evictionPreview(blocks, 1e9).size).toBe(0);
  });
});
