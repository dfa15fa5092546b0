import { whereResident } from '../api/reducers.js';
import type { ModelView } from '../api/types.js';

export interface DeviceBlock {
  readonly model: string;
  readonly bytes: number;
  readonly pinned: boolean;
  /** When a dispatch last used the weights, epoch ms; null: not since they were uploaded. */
  readonly lastUsedAt: number | null;
}

/**
 * The models whose weights are on a device now (the engine reports one device per worker): pinned
 * first, then the evictable ones least recently used first, the order the engine evicts them in.
 */
export function deviceBlocks(models: readonly ModelView[]): DeviceBlock[] {
  return models
    .filter((m) => whereResident(m.residency) === 'device')
    .map((m) => ({
      model: m.name,
      bytes: m.residency!.weightBytes,
      pinned: m.residency!.floor === 'device',
      lastUsedAt: m.residency!.lastUsedAt ?? null,
    }))
    .sort(
      (a, b) =>
        Number(b.pinned) - Number(a.pinned) ||
        (a.lastUsedAt ?? -Infinity) - (b.lastUsedAt ?? -Infinity) ||
        (a.model < b.model ? -1 : a.model > b.model ? 1 : 0),
    );
}

/**
 * Which unpinned blocks a smaller budget would evict: the engine trims to a new budget least
 * recently used first, so blocks are taken in deviceBlocks' order until what stays fits.
 */
export function evictionPreview(blocks: readonly DeviceBlock[], budgetBytes: number): Set<string> {
  let used = blocks.filter((b) => !b.pinned).reduce((s, b) => s + b.bytes, 0);
  const out = new Set<string>();
  for (const b of blocks) {
    if (used <= budgetBytes) break;
    if (b.pinned) continue;
    out.add(b.model);
    used -= b.bytes;
  }
  return out;
}
