import { memo } from 'react';
import type { DeviceMemoryView } from '../api/types.js';
import type { DeviceBlock } from './device-blocks.js';
import { formatBytes } from './format.js';

/**
 * The scale of a device's bar: its memory where the runtime reports it, else enough to show the
 * budget with room for what is over it (the CPU plugin reports no total).
 */
function scaleOf(d: DeviceMemoryView, used: number, budget: number | null): number {
  if (d.totalBytes) return d.totalBytes;
  return Math.max(1, (budget ?? 0) * 1.15, used * 1.15);
}

/**
 * One device's memory: pinned and resident blocks per model, arena slack, free, and the budget line.
 * Memoised: the overview renders every second for its charts, the bar only when its props change.
 */
export const MemoryBar = memo(function MemoryBar({
  device,
  blocks,
  budgetOverride,
}: {
  device: DeviceMemoryView;
  blocks: readonly DeviceBlock[];
  budgetOverride?: number;
}) {
  const budget = budgetOverride ?? device.budgetBytes;
  const pinned = blocks.filter((b) => b.pinned);
  const resident = blocks.filter((b) => !b.pinned);
  const pinnedBytes = pinned.reduce((s, b) => s + b.bytes, 0);
  const residentBytes = resident.reduce((s, b) => s + b.bytes, 0);
  // Weights live in the arena when there is one: only its mapped-but-unused part is extra.
  const arenaSlack = device.arenaBytes === null ? 0 : Math.max(0, device.arenaBytes - pinnedBytes - residentBytes);
  const used = pinnedBytes + residentBytes + arenaSlack;
  const scale = scaleOf(device, used, budget);
  const pct = (b: number) => `${Math.min(100, (b / scale) * 100).toFixed(3)}%`;
  const label =
    `device ${device.ordinal} (${device.platform}): pinned ${formatBytes(pinnedBytes)}, resident ${formatBytes(residentBytes)}` +
    `, arena slack ${formatBytes(arenaSlack)}, free ${formatBytes(device.freeBytes)}, budget ${budget === null ? 'unlimited' : formatBytes(budget)}`;
  return (
    <div>
      <div className="membar" role="img" aria-label={label} data-testid="memory-bar">
        {pinned.map((b) => (
          <span
            key={b.model}
            style={{ width: pct(b.bytes), background: 'var(--pinned)' }}
            title={`${b.model} (pinned) ${formatBytes(b.bytes)}`}
          />
        ))}
        {resident.map((b, i) => (
          <span
            key={b.model}
            style={{ width: pct(b.bytes), background: 'var(--resident)', opacity: 1 - Math.min(0.45, (i % 10) * 0.05) }}
            title={`${b.model} ${formatBytes(b.bytes)}`}
          />
        ))}
        {arenaSlack > 0 && (
          <span
            style={{ width: pct(arenaSlack), background: 'var(--arena)' }}
            title={`arena, mapped and unused: ${formatBytes(arenaSlack)}`}
          />
        )}
        {budget !== null && (
          <span className="budget" style={{ left: pct(budget) }} title={`budget ${formatBytes(budget)}`} />
        )}
      </div>
      <div className="legend">
        <span>
          <i style={{ background: 'var(--pinned)' }} />
          pinned {formatBytes(pinnedBytes)}
        </span>
        <span>
          <i style={{ background: 'var(--resident)' }} />
          resident {formatBytes(residentBytes)} ({resident.length} models)
        </span>
        <span>
          <i style={{ background: 'var(--arena)' }} />
          arena {device.arenaBytes === null ? 'none' : `${formatBytes(device.arenaBytes)} mapped`}
        </span>
        <span>
          <i style={{ background: 'var(--free)', border: '1px solid var(--border)' }} />
          free {device.freeBytes === null ? 'unlimited' : formatBytes(device.freeBytes)}
        </span>
        <span>
          <i style={{ background: 'var(--bad)' }} />
          budget {budget === null ? 'unlimited' : formatBytes(budget)}
          {device.totalBytes ? ` of ${formatBytes(device.totalBytes)}` : ''}
        </span>
      </div>
    </div>
  );
});
