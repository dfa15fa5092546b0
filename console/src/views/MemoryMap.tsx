import { useMemo, useState } from 'react';
import type { DeviceMemoryView, ModelView } from '../api/types.js';
import { useControlMode, useModelAction, useModels, useSetWeightBudget, useWorkers } from '../app/data.js';
import { budgetVerdict, canOperate, modelActionVerdict } from '../app/permissions.js';
import { useSession } from '../app/session.js';
import { formatAgo, formatBytes } from '../components/format.js';
import { deviceBlocks, evictionPreview, type DeviceBlock } from '../components/device-blocks.js';
import { MemoryBar } from '../components/MemoryBar.js';
import { QueryState } from '../components/QueryState.js';

export function MemoryMap() {
  const workers = useWorkers();
  const models = useModels();
  return (
    <>
      <h1>Memory map</h1>
      <QueryState isLoading={workers.isLoading || models.isLoading} error={workers.error ?? models.error}>
        {(workers.data ?? []).flatMap((w) =>
          w.devices.map((d) => (
            <DeviceMap key={`${w.name}:${d.ordinal}`} worker={w.name} device={d} models={models.data ?? []} />
          )),
        )}
        <HostCache models={models.data ?? []} />
      </QueryState>
    </>
  );
}

function DeviceMap({
  worker,
  device,
  models,
}: {
  worker: string;
  device: DeviceMemoryView;
  models: readonly ModelView[];
}) {
  const session = useSession();
  const controlMode = useControlMode();
  const act = useModelAction();
  const operate = canOperate(session.data?.scope);
  const [budgetMiB, setBudgetMiB] = useState<number | null>(null);
  const blocks = useMemo(() => deviceBlocks(models), [models]);
  const byName = useMemo(() => new Map(models.map((m) => [m.name, m])), [models]);
  const setBudget = useSetWeightBudget();
  const budget = budgetMiB === null ? device.budgetBytes : Math.round(budgetMiB * 2 ** 20);
  const apply = budgetVerdict(session.data?.scope, device.budgetBytes, budgetMiB === null ? null : budget);
  const preview = useMemo(
    () => (budget === null ? new Set<string>() : evictionPreview(blocks, budget)),
    [blocks, budget],
  );
  const block = (b: DeviceBlock) => {
    const m = byName.get(b.model)!;
    const action = b.pinned ? 'unpin' : 'pin';
    const verdict = modelActionVerdict(action, m, session.data?.scope, controlMode);
    const label = `${b.model}, ${formatBytes(b.bytes)}${b.pinned ? ', pinned' : ''}${preview.has(b.model) ? ', would be evicted' : ''}`;
    const body = (
      <>
        <div className="mono">{b.model}</div>
        <div className="muted">
          {formatBytes(b.bytes)}
          {b.pinned ? ' · pinned' : ` · used ${formatAgo(b.lastUsedAt)}`}
        </div>
      </>
    );
    const cls = `block${b.pinned ? ' pinned' : ''}${preview.has(b.model) ? ' evict' : ''}`;
    const grow = { flexGrow: Math.max(1, Math.log2(1 + b.bytes / 2 ** 20)) };
    if (!operate)
      return (
        <div key={b.model} className={cls} aria-label={label} style={grow}>
          {body}
        </div>
      );
    return (
      <button
        key={b.model}
        type="button"
        className={cls}
        aria-label={`${label}; ${action}`}
        title={verdict.whyNot ?? `click to ${action}`}
        disabled={!verdict.allowed || act.isPending}
        style={grow}
        onClick={() => act.mutate({ name: b.model, action })}
        data-testid="memory-block"
      >
        {body}
      </button>
    );
  };
  const pinned = blocks.filter((b) => b.pinned);
  const resident = blocks.filter((b) => !b.pinned);
  return (
    <section className="panel" aria-label={`device ${device.ordinal} of ${worker}`}>
      <h2>
        Device {device.ordinal}{' '}
        <span className="muted">
          {device.platform} · worker {worker}
        </span>
      </h2>
      <MemoryBar device={device} blocks={blocks} budgetOverride={budget ?? undefined} />
      <h3>Pinned {operate && <span className="muted">(click to unpin)</span>}</h3>
      <div className="memmap">{pinned.length ? pinned.map(block) : <span className="muted">none</span>}</div>
      <h3>Resident, evictable, least recently used first {operate && <span className="muted">(click to pin)</span>}</h3>
      <div className="memmap" data-testid="resident-blocks">
        {resident.length ? resident.map(block) : <span className="muted">none</span>}
      </div>
      <h3>Budget</h3>
      <div className="row">
        <label className="field">
          Budget (MiB)
          <input
            type="number"
            min={0}
            value={budgetMiB ?? (device.budgetBytes === null ? '' : Math.round(device.budgetBytes / 2 ** 20))}
            placeholder="unlimited"
            onChange={(e) => setBudgetMiB(Number.isFinite(e.target.valueAsNumber) ? e.target.valueAsNumber : null)}
            data-testid="budget-input"
          />
        </label>
        <span data-testid="evict-preview">
          {preview.size === 0 ? 'Nothing would be evicted.' : `Would evict ${preview.size}: ${[...preview].join(', ')}`}
        </span>
        {operate && (
          <button
            type="button"
            className={preview.size ? 'danger' : 'primary'}
            disabled={!apply.allowed || setBudget.isPending}
            title={apply.whyNot ?? undefined}
            onClick={() => setBudget.mutate(budget!, { onSuccess: () => setBudgetMiB(null) })}
            data-testid="budget-apply"
          >
            Apply budget
          </button>
        )}
        {operate && apply.whyNot && budgetMiB !== null && <span className="muted">{apply.whyNot}</span>}
      </div>
      {setBudget.error && (
        <p className="error" role="alert">
          {setBudget.error.message}
        </p>
      )}
      <p className="muted">
        Type a budget to preview what would be evicted, least recently used first; an admin applies it (audited, kept
        across restarts, winning over node.yaml's runtime.weight_cache_bytes). Pinned weights are outside the budget.
      </p>
    </section>
  );
}

function HostCache({ models }: { models: readonly ModelView[] }) {
  const host = models.filter((m) => m.residency?.hostResident && !m.residency.deviceResident);
  return (
    <section className="panel">
      <h2>Host memory only</h2>
      <p className="muted">Weights held in host memory, one copy away from the device.</p>
      <div className="memmap">
        {host.length === 0 ? (
          <span className="muted">none</span>
        ) : (
          host.map((m) => (
            <div key={m.name} className="block" style={{ background: 'var(--panel)' }}>
              <div className="mono">{m.name}</div>
              <div className="muted">
                {formatBytes(m.residency!.weightBytes)}
                {m.residency!.floor === 'system' ? ' · host copy kept' : ''}
              </div>
            </div>
          ))
        )}
      </div>
    </section>
  );
}
