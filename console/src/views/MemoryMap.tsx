import { useMemo, useState } from 'react';
import type { DeviceModelBlock, WorkerInfo } from '../api/types.js';
import { useModelAction, useModels, useWorkers } from '../app/data.js';
import { canOperate, modelActionVerdict } from '../app/permissions.js';
import { useSession } from '../app/session.js';
import { formatAgo, formatBytes } from '../components/format.js';
import { MemoryBar } from '../components/MemoryBar.js';
import { QueryState } from '../components/QueryState.js';

/** Which unpinned blocks a budget would evict: least recently used first until the rest fits. */
export function evictionPreview(
  blocks: readonly DeviceModelBlock[],
  arenaBytes: number,
  budgetBytes: number,
): Set<string> {
  let used = arenaBytes + blocks.reduce((s, b) => s + b.bytes, 0);
  const out = new Set<string>();
  const lru = blocks.filter((b) => !b.pinned).sort((a, b) => (a.lastUsedMs ?? 0) - (b.lastUsedMs ?? 0));
  for (const b of lru) {
    if (used <= budgetBytes) break;
    out.add(b.model);
    used -= b.bytes;
  }
  return out;
}

export function MemoryMap() {
  const workers = useWorkers();
  return (
    <>
      <h1>Memory map</h1>
      <QueryState isLoading={workers.isLoading} error={workers.error}>
        {(workers.data ?? []).map((w) => (
          <WorkerMap key={w.name} worker={w} />
        ))}
      </QueryState>
    </>
  );
}

function WorkerMap({ worker }: { worker: WorkerInfo }) {
  const session = useSession();
  const models = useModels();
  const act = useModelAction();
  const operate = canOperate(session.data?.scope);
  const [budgetMiB, setBudgetMiB] = useState<number | null>(null);
  const budget = budgetMiB === null ? worker.memory.budgetBytes : budgetMiB * 2 ** 20;
  const preview = useMemo(
    () => evictionPreview(worker.memory.models, worker.memory.arenaBytes, budget),
    [worker, budget],
  );
  const pinned = worker.memory.models.filter((b) => b.pinned);
  const lru = worker.memory.models.filter((b) => !b.pinned).sort((a, b) => (b.lastUsedMs ?? 0) - (a.lastUsedMs ?? 0));
  const byName = new Map((models.data ?? []).map((m) => [m.name, m]));
  const block = (b: DeviceModelBlock) => {
    const m = byName.get(b.model);
    const verdict = m
      ? modelActionVerdict(b.pinned ? 'unpin' : 'pin', m, session.data)
      : { allowed: false, whyNot: 'unknown model' };
    const label = `${b.model}, ${formatBytes(b.bytes)}, ${b.pinned ? 'pinned' : `used ${formatAgo(b.lastUsedMs)}`}${preview.has(b.model) ? ', would be evicted' : ''}`;
    const body = (
      <>
        <div className="mono">{b.model}</div>
        <div className="muted">
          {formatBytes(b.bytes)} · {b.pinned ? 'pinned' : formatAgo(b.lastUsedMs)}
        </div>
      </>
    );
    const cls = `block${b.pinned ? ' pinned' : ''}${preview.has(b.model) ? ' evict' : ''}`;
    if (!operate)
      return (
        <div key={b.model} className={cls} aria-label={label} style={{ flexGrow: b.bytes }}>
          {body}
        </div>
      );
    return (
      <button
        key={b.model}
        type="button"
        className={cls}
        aria-label={`${label}; ${b.pinned ? 'unpin' : 'pin'}`}
        title={verdict.whyNot ?? `click to ${b.pinned ? 'unpin' : 'pin'}`}
        disabled={!verdict.allowed || act.isPending}
        style={{ flexGrow: b.bytes }}
        onClick={() => act.mutate({ name: b.model, action: b.pinned ? 'unpin' : 'pin' })}
      >
        {body}
      </button>
    );
  };
  return (
    <section className="panel" aria-label={`worker ${worker.name}`}>
      <h2>
        {worker.name} <span className="muted">{worker.device}</span>
      </h2>
      <MemoryBar worker={{ ...worker, memory: { ...worker.memory, budgetBytes: budget } }} />
      <h3>Pinned</h3>
      <div className="memmap">{pinned.length ? pinned.map(block) : <span className="muted">none</span>}</div>
      <h3>Resident, most recently used first</h3>
      <div className="memmap" data-testid="lru-blocks">
        {lru.length ? lru.map(block) : <span className="muted">none</span>}
      </div>
      <h3>Budget preview</h3>
      <div className="row">
        <label className="field">
          Budget (MiB)
          <input
            type="number"
            min={0}
            value={budgetMiB ?? Math.round(worker.memory.budgetBytes / 2 ** 20)}
            onChange={(e) => setBudgetMiB(Number.isFinite(e.target.valueAsNumber) ? e.target.valueAsNumber : null)}
            data-testid="budget-input"
          />
        </label>
        <span data-testid="evict-preview">
          {preview.size === 0 ? 'Nothing would be evicted.' : `Would evict ${preview.size}: ${[...preview].join(', ')}`}
        </span>
      </div>
      <p className="muted">The preview is computed here from the LRU order; the engine's budget is set in node.yaml.</p>
    </section>
  );
}
