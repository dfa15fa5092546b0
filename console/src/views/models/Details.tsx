import { useState } from 'react';
import { ApiError } from '../../api/errors.js';
import { whereResident } from '../../api/reducers.js';
import type { ModelAction, ModelView, ModelPolicyView, Scope } from '../../api/types.js';
import { useControlMode, useModel, useModelAction, usePolicyUpdate } from '../../app/data.js';
import { canOperate, modelActionVerdict } from '../../app/permissions.js';
import { Link } from '../../app/router.js';
import { useSession } from '../../app/session.js';
import { ActionButton } from '../../components/ActionButton.js';
import { formatBytes } from '../../components/format.js';
import { QueryState } from '../../components/QueryState.js';
import { IoTab } from './IoTab.js';
import { PerformanceTab } from './PerformanceTab.js';
import { diffPolicy, policyPatch, validatePolicy } from './policy.js';
import { ResidencyTab } from './ResidencyTab.js';
import { TryItTab } from './TryItTab.js';
import { VersionsTab } from './VersionsTab.js';

const tabs = ['Overview', 'Performance', 'Residency', 'Policy', 'Versions', 'Try it'] as const;
type Tab = (typeof tabs)[number];

export function ModelDetails({ name }: { name: string }) {
  const model = useModel(name);
  const session = useSession();
  const controlMode = useControlMode();
  const [tab, setTab] = useState<Tab>('Overview');
  const m = model.data;
  return (
    <>
      <p>
        <Link to="/models">← Models</Link>
      </p>
      <h1>
        {name} {m && <span className="muted">v{m.version}</span>}
      </h1>
      <QueryState isLoading={model.isLoading} error={model.error}>
        {m === null ? (
          <p className="error">No model named {name}: it may have been removed from the repository.</p>
        ) : m ? (
          <>
            <Actions model={m} scope={session.data?.scope} controlMode={controlMode} />
            <div className="tabs" role="tablist" aria-label="model detail">
              {tabs.map((t) => (
                <button key={t} type="button" role="tab" aria-selected={tab === t} onClick={() => setTab(t)}>
                  {t}
                </button>
              ))}
            </div>
            <div role="tabpanel" aria-label={tab}>
              {tab === 'Overview' && <IoTab model={m} />}
              {tab === 'Performance' && <PerformanceTab model={m} />}
              {tab === 'Residency' && <ResidencyTab model={m} />}
              {tab === 'Policy' && <PolicyTab model={m} editable={canOperate(session.data?.scope)} />}
              {tab === 'Versions' && <VersionsTab model={m} scope={session.data?.scope} controlMode={controlMode} />}
              {tab === 'Try it' && <TryItTab model={m} scope={session.data?.scope} />}
            </div>
          </>
        ) : null}
      </QueryState>
    </>
  );
}

function Actions(props: { model: ModelView; scope: Scope | undefined; controlMode: string | undefined }) {
  const { model, scope, controlMode } = props;
  const act = useModelAction();
  const [error, setError] = useState<string | null>(null);
  const r = model.residency;
  const summary = (
    <div className="row" style={{ gap: 14 }}>
      <span className={`pill ${model.state.toLowerCase()}`}>{model.state.toLowerCase()}</span>
      {model.reason && <span className="muted">{model.reason}</span>}
      {model.drain && (
        <span className="pill unavailable" data-testid="model-drained">
          {model.drain.idle ? 'drained' : `draining (${model.drain.pending} pending)`}
        </span>
      )}
      <span>
        weights on <strong>{whereResident(r)}</strong> ({formatBytes(r?.weightBytes)})
      </span>
      <span>pin: {r?.floor ?? model.policy?.residency ?? 'unpinned'}</span>
      <span className="muted">compiled batch sizes {model.batchSizes.join(', ')}</span>
    </div>
  );
  if (!canOperate(scope)) return <div className="panel">{summary}</div>;
  const run = (action: ModelAction, pinTo?: 'system' | 'device') => {
    setError(null);
    act.mutate(
      { name: model.name, action, pinTo },
      { onError: (e) => setError(e instanceof ApiError ? `${e.message} (${e.code})` : String(e)) },
    );
  };
  const v = (a: ModelAction) => modelActionVerdict(a, model, scope, controlMode);
  const pinVerdict = v('pin');
  const systemPin = r?.floor === 'system' ? { allowed: false, whyNot: 'already pinned in host memory' } : pinVerdict;
  return (
    <div className="panel" data-testid="model-actions">
      {summary}
      <div className="row" style={{ marginTop: 10 }}>
        {(['load', 'unload', 'reload', model.drain ? 'resume' : 'drain'] as const).map((a) => (
          <ActionButton
            key={a}
            verdict={v(a)}
            onClick={() => run(a)}
            busy={act.isPending && act.variables?.action === a}
            testId={`action-${a}`}
          >
            {a}
          </ActionButton>
        ))}
        <ActionButton verdict={pinVerdict} onClick={() => run('pin', 'device')} testId="action-pin">
          pin on device
        </ActionButton>
        <ActionButton verdict={systemPin} onClick={() => run('pin', 'system')} testId="action-pin-system">
          pin in host memory
        </ActionButton>
        <ActionButton verdict={v('unpin')} onClick={() => run('unpin')} testId="action-unpin">
          unpin
        </ActionButton>
      </div>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

const defaultPolicy: ModelPolicyView = { residency: 'unpinned', weight: 1, maxBatchSize: null, maxQueueDelayUs: null };

function PolicyTab({ model, editable }: { model: ModelView; editable: boolean }) {
  const current = model.policy ?? defaultPolicy;
  const [draft, setDraft] = useState<ModelPolicyView>(current);
  const [reviewing, setReviewing] = useState(false);
  const update = usePolicyUpdate(model.name);
  const errors = validatePolicy(draft);
  const changes = diffPolicy(current, draft);
  const optionalInt = (key: 'maxBatchSize' | 'maxQueueDelayUs', label: string, placeholder: string) => (
    <label className="field">
      {label}
      <input
        type="number"
        value={draft[key] ?? ''}
        placeholder={placeholder}
        disabled={!editable}
        onChange={(e) => setDraft({ ...draft, [key]: e.target.value === '' ? null : e.target.valueAsNumber })}
        data-testid={`policy-${key}`}
      />
      {errors[key] && <span className="error">{errors[key]}</span>}
    </label>
  );
  return (
    <section className="panel" data-testid="policy">
      <h2>Policy</h2>
      {!editable && <p className="muted">Read-only: changing a policy needs an operator or admin token.</p>}
      <div className="row" style={{ alignItems: 'flex-start' }}>
        <label className="field">
          Residency floor
          <select
            value={draft.residency}
            disabled={!editable}
            onChange={(e) => setDraft({ ...draft, residency: e.target.value as ModelPolicyView['residency'] })}
          >
            <option value="unpinned">unpinned (evictable)</option>
            <option value="system">system (pinned in host memory)</option>
            <option value="device">device (pinned on the device)</option>
          </select>
        </label>
        <label className="field">
          Weight (fair share)
          <input
            type="number"
            step="any"
            value={draft.weight}
            disabled={!editable}
            onChange={(e) => setDraft({ ...draft, weight: e.target.valueAsNumber })}
            data-testid="policy-weight"
          />
          {errors.weight && <span className="error">{errors.weight}</span>}
        </label>
        {optionalInt('maxBatchSize', 'Max batch size', `largest (${Math.max(...model.batchSizes)})`)}
        {optionalInt('maxQueueDelayUs', 'Batching window (µs)', 'scheduler default')}
      </div>
      {editable && (
        <div style={{ marginTop: 12 }}>
          {!reviewing ? (
            <button
              type="button"
              className="primary"
              disabled={changes.length === 0 || Object.keys(errors).length > 0}
              onClick={() => setReviewing(true)}
              data-testid="policy-review"
            >
              Review {changes.length} change{changes.length === 1 ? '' : 's'}
            </button>
          ) : (
            <div className="diff" data-testid="policy-diff">
              <ul>
                {changes.map((c) => (
                  <li key={c.key}>
                    <strong>{c.key}</strong>: <span className="old">{String(c.before ?? 'default')}</span> →{' '}
                    <span className="new">{String(c.after ?? 'default')}</span>
                  </li>
                ))}
              </ul>
              <div className="row">
                <button
                  type="button"
                  className="primary"
                  disabled={update.isPending}
                  onClick={() => update.mutate(policyPatch(changes), { onSuccess: () => setReviewing(false) })}
                >
                  Apply (persisted, audited)
                </button>
                <button type="button" onClick={() => setReviewing(false)}>
                  Back
                </button>
              </div>
              {update.error && <p className="error">{update.error.message}</p>}
            </div>
          )}
        </div>
      )}
    </section>
  );
}
