import type { WorkerInfo } from '../api/types.js';
import { formatBytes } from './format.js';

/** Device memory of one worker: pinned, resident per model (LRU order), arena, free, and the budget line. */
export function MemoryBar({ worker }: { worker: WorkerInfo }) {
  const m = worker.memory;
  const total = Math.max(1, m.totalBytes);
  const pct = (b: number) => `${((b / total) * 100).toFixed(3)}%`;
  const pinned = m.models.filter((b) => b.pinned);
  const lru = m.models.filter((b) => !b.pinned).sort((a, b) => (b.lastUsedMs ?? 0) - (a.lastUsedMs ?? 0));
  const pinnedBytes = pinned.reduce((s, b) => s + b.bytes, 0);
  const residentBytes = lru.reduce((s, b) => s + b.bytes, 0);
  const label = `${worker.name}: pinned ${formatBytes(pinnedBytes)}, resident ${formatBytes(residentBytes)}, arena ${formatBytes(m.arenaBytes)}, free ${formatBytes(m.freeBytes)} of ${formatBytes(m.totalBytes)}, budget ${formatBytes(m.budgetBytes)}`;
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
        {lru.map((b, i) => (
          <span
            key={b.model}
            style={{ width: pct(b.bytes), background: 'var(--resident)', opacity: 1 - Math.min(0.5, i * 0.04) }}
            title={`${b.model} ${formatBytes(b.bytes)}`}
          />
        ))}
        <span
          style={{ width: pct(m.arenaBytes), background: 'var(--arena)' }}
          title={`arena ${formatBytes(m.arenaBytes)}`}
        />
        <span className="budget" style={{ left: pct(m.budgetBytes) }} title={`budget ${formatBytes(m.budgetBytes)}`} />
      </div>
      <div className="legend">
        <span>
          <i style={{ background: 'var(--pinned)' }} />
          pinned {formatBytes(pinnedBytes)}
        </span>
        <span>
          <i style={{ background: 'var(--resident)' }} />
          resident {formatBytes(residentBytes)} ({lru.length} models)
        </span>
        <span>
          <i style={{ background: 'var(--arena)' }} />
          arena {formatBytes(m.arenaBytes)}
        </span>
        <span>
          <i style={{ background: 'var(--free)', border: '1px solid var(--border)' }} />
          free {formatBytes(m.freeBytes)}
        </span>
        <span>
          <i style={{ background: 'var(--bad)' }} />
          budget {formatBytes(m.budgetBytes)} of {formatBytes(m.totalBytes)}
        </span>
      </div>
    </div>
  );
}
